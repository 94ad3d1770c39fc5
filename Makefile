# Two commands do all set-up on a fresh machine (Python 3.11 + Java 17):
#   make demo   - build the environment, generate a realistic DLQ and run the pipeline on it
#   make test   - build the environment and run the whole test suite
#   make package - the wheel, a packed virtual environment and the JVM reader's jar for spark-submit, in dist/
#                  (docs/deploy.md; PACKAGE_ARGS="--extra mq" adds IBM's ibmmq binding)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The tested environment: Spark 4.2 + Delta 4.4, every package pinned (constraints/README.md).
CONSTRAINTS ?= constraints/spark-4.2.txt

.PHONY: venv demo test check lint fmt package clean delta-jars s3a-jars hadoop-jars class-archive jvm-reader browser chromium test-envs mq-layers


$(STAMP): pyproject.toml $(CONSTRAINTS)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c $(CONSTRAINTS) -e '.[spark,delta,connect,test,package]'
	touch $(STAMP)

venv: $(STAMP)

# Delta Lake's jars, fetched once from Maven Central into ~/.cache/dlq-pipeline/jars (outside
# the repository; a no-op when they are there): Delta sessions then start without network.
delta-jars: $(STAMP)
	$(BIN)/python -m dlq_pipeline.engine.delta

# Hadoop's S3A connector (hadoop-aws of the Hadoop version inside pyspark, with its AWS SDK
# bundle, about 700 MB), fetched once like Delta's jars: local sessions reach s3a:// with it.
s3a-jars: $(STAMP)
	$(BIN)/python -m dlq_pipeline.engine.s3a

# The JVM reader of ingest (dmpmqmsg dumps parsed in the executors' JVM) in this checkout: its
# Java sources, in the package, compiled with the JDK's javac against pyspark's jars into a jar
# next to them, named by the sources' digest (~5 s; a no-op when it is there). A wheel's build
# compiles it too (tools/build_backend.py). dlq_pipeline/ingest/jvm_reader.py
jvm-reader: $(STAMP)
	$(BIN)/python -m dlq_pipeline.ingest.jvm_reader

# The JVM class archive local Spark sessions start with (about half of a cold start-up is
# loading classes): built once per Java and pyspark into ~/.cache/dlq-pipeline/cds, from a
# small pipeline run (~40 s; a no-op when it is there). dlq_pipeline/engine/class_archive.py
class-archive: $(STAMP) jvm-reader
	$(BIN)/python -m dlq_pipeline.engine.class_archive

# `dlq-pipeline setup` first: the class archive the demo's JVM then starts from (~40 s, once)
demo: $(STAMP) jvm-reader
	$(BIN)/dlq-pipeline setup
	$(BIN)/dlq-pipeline demo --out demo-out

# Hadoop's mini cluster (the HDFS of the `cluster` test tier), the version of the Hadoop client
# inside pyspark, fetched once with Maven into ~/.cache/dlq-pipeline/jars (a no-op when there).
hadoop-jars: $(STAMP)
	$(BIN)/python -m tests.cluster.bed fetch

# pymqi's Python package, from its sdist at the `mq-legacy` extra's floor (its build needs IBM's
# MQ headers, so it is not installed), fetched once with pip into ~/.cache/dlq-pipeline/mq-layers
# for the MQ client contract test (a no-op when it is there); ibmmq comes with the venv.
# tests/mq_layers.py
mq-layers: $(STAMP)
	$(BIN)/python -m tests.mq_layers

# What the tests use besides the package, built once and reused while their inputs are unchanged
# (all outside the repository, under ~/.cache/dlq-pipeline): the other Spark tiers' venvs and
# the runtimes' (tests/venvs.py), and `make package`'s dist/ keyed by the sources' digest
# (tests/packed.py; ~2 minutes when the package changed).
test-envs: $(STAMP) jvm-reader
	$(BIN)/python -m tests.venvs
	$(BIN)/python -m tests.packed

# Style and types (configured in pyproject.toml): ruff's lint and format check, then mypy.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Rewrite what ruff can: import order, upgrades, formatting.
fmt: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# The inner loop, in under two minutes: lint, then every pure test (no Java, no Spark, no
# network; the `unit` tier tests/conftest.py gives them) with the quick Hypothesis profile
# (tests/profiles.py).
check: $(STAMP) lint mq-layers
	DLQ_TEST_PROFILE=quick $(BIN)/python -m pytest -q -m unit -p no:cacheprovider $(PYTEST_ARGS)

# Everything: lint, set-up (jars, class archive, environments, chromium), then every tier, in
# TEST_WORKERS pytest-xdist workers (a test file, and the whole cluster tier, on one worker:
# tests/conftest.py's scheduler). TEST_WORKERS=0 runs in this process.
TEST_WORKERS ?= 2
test: $(STAMP) lint delta-jars s3a-jars hadoop-jars jvm-reader class-archive chromium test-envs mq-layers
	$(BIN)/python -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

# Debian's chromium, for the browser tests (the HTML report rendered headless): installed once
# when missing (apt-get, as root or through sudo).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
chromium:
	@command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q chromium; }

# only the browser tests
browser: $(STAMP) chromium
	$(BIN)/python -m pytest -q tests/browser $(PYTEST_ARGS)

package: $(STAMP)
	$(BIN)/python tools/package.py --dist dist --constraints $(CONSTRAINTS) $(PACKAGE_ARGS)

# every stage against the obvious way and the limit; QUICK=1 for a few minutes (docs/performance.md, "Running the benchmarks")
.PHONY: bench
bench: $(STAMP) jvm-reader class-archive
	$(BIN)/python -m benchmarks.run $(if $(QUICK),--quick) $(BENCH_ARGS)

clean:
	rm -rf $(VENV) demo-out warehouse build dist *.egg-info .pytest_cache .hypothesis .mypy_cache .ruff_cache
