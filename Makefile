# Two commands do all set-up on a fresh machine (Python 3.11 + Java 17):
#   make demo   - build the environment, generate a realistic DLQ and run the pipeline on it
#   make test   - build the environment and run the whole test suite
#   make package - the wheel and a packed virtual environment for spark-submit, in dist/
#                  (docs/deploy.md; PACKAGE_ARGS="--extra mq" adds IBM's ibmmq binding)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: venv demo test package clean browser

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,package]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/dlq-pipeline demo --out demo-out

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# the report page in headless Chromium (tests/browser): installs Debian's chromium when missing
browser: $(STAMP)
	@command -v chromium >/dev/null 2>&1 || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }
	$(BIN)/python -m pytest -q tests/browser $(PYTEST_ARGS)

package: $(STAMP)
	$(BIN)/python tools/package.py --dist dist $(PACKAGE_ARGS)

# every stage against the obvious way and the limit; QUICK=1 for a few minutes (docs/performance.md)
.PHONY: bench
bench: $(STAMP)
	$(BIN)/python -m benchmarks.run $(if $(QUICK),--quick) $(BENCH_ARGS)

clean:
	rm -rf $(VENV) demo-out warehouse build dist *.egg-info .pytest_cache .hypothesis
