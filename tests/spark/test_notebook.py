"""notebooks/triage.ipynb runs top to bottom, headless, on a small warehouse built here."""

from __future__ import annotations

import datetime as dt
import re

import nbformat
import pytest
from nbclient import NotebookClient

from dlq_pipeline.config import load_config
from dlq_pipeline.config.settings import RunSettings
from dlq_pipeline.dumps.generator import STORMS, write_generated
from dlq_pipeline.pipeline import run_pipeline
from dlq_pipeline.rules.parser import load_rules
from tests.support import REPO

pytestmark = [pytest.mark.spark, pytest.mark.deploy]
NOTEBOOK = REPO / "notebooks" / "triage.ipynb"
STARTER = REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules"
COUNT = 600  # enough for the generated storms to stand out of the trickle as bursts


def test_notebook_is_committed_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None for c in code)
    assert "parameters" in code[0].metadata.get("tags", [])


def run_notebook(spark, tmp_path, monkeypatch, **env):
    """Build a small warehouse with ``spark``, run the notebook headless on it with the
    ``DLQ_TRIAGE_*`` variables (and ``env``) set; assert what it showed."""
    [dump] = write_generated(tmp_path / "dumps", COUNT, seed=8, files=1, max_size=4096)
    warehouse = tmp_path / "wh"
    config = load_config(overrides={"storage": {"path": str(warehouse)}})
    run_pipeline(
        spark,
        RunSettings.from_config(config),
        load_rules(str(STARTER)),
        inputs=[str(dump)],
        target="dry-run",
        now=dt.datetime(2026, 3, 1, 12),
    )
    draft = tmp_path / "draft.rules"
    head, _, rest = STARTER.read_text().partition("\nREASON(MQRC_Q_FULL)")
    draft.write_text(
        head + "\nREASON(MQRC_Q_FULL) ACTION(FWD) FWDQ(HOLD.QFULL) HEADER(YES)\nREASON(MQRC_Q_FULL)" + rest
    )
    for name, value in {
        "DLQ_TRIAGE_WAREHOUSE": str(warehouse),
        "DLQ_TRIAGE_DRAFT_RULES": str(draft),
        "DLQ_TRIAGE_CURRENT_RULES": str(STARTER),
        "DLQ_TRIAGE_REDACT": "1",
        "DLQ_TRIAGE_MASTER": "local[1]",
        **env,
    }.items():
        monkeypatch.setenv(name, value)

    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()

    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 4  # reasons/destinations/age, trends, offenders, what-if
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert f"Storage(parquet, {warehouse})" in text
    changed = next(line for line in text.splitlines() if "pending messages would be decided differently" in line)
    assert changed.endswith(f" of {COUNT} pending messages would be decided differently")
    assert not changed.startswith("0 ")
    drafted = text.split("* A rules table drafted by `dlq-pipeline rules suggest`", 1)[1]
    assert "\nACTION(FWD) FWDQ(DLQ.UNMATCHED) HEADER(YES)\n" in drafted
    assert drafted.splitlines()[-1].endswith(f" of {COUNT} pending messages would be decided differently")

    def cell_outputs(snippet: str) -> list:
        [cell] = [c for c in nb.cells if c.cell_type == "code" and snippet in c.source]
        return cell.outputs

    # arrivals: the Q_FULL storm of the generated DLQ is a flagged burst, sent by its queue managers
    storm = next(s for s in STORMS if s.name == "q_full")
    [bursts] = [
        o["data"]["text/html"] for o in cell_outputs("triage.arrivals(tables)") if o.output_type == "execute_result"
    ]
    rows = re.findall(r"<tr>(.*?)</tr>", bursts, re.S)
    q_full = [row for row in rows if re.search(r"<td>MQRC_Q_FULL \d+", row)]
    assert len(q_full) == 1 and re.search(r"<td>CSQ1 \d+", q_full[0]), bursts
    # advice: the report's items, the full queue among them, each with its evidence
    advice = cell_outputs("triage.advice(")
    printed = "".join(o.get("text", "") for o in advice if o.output_type == "stream").splitlines()
    assert any(
        line.startswith(f"[act] queue_full: {storm.dest_q} on {storm.home} was full for about ") for line in printed
    ), printed
    assert any(line.startswith("[") and " no_dlh_stays: " in line for line in printed), printed
    [page] = [o["data"]["text/html"] for o in advice if "text/html" in o.get("data", {})]
    assert page.count("<details><summary>evidence</summary>") == len(printed) > 1
    sample_html = next(o["data"]["text/html"] for c in nb.cells if "triage.sample" in c.source for o in c.outputs)
    assert "&lt;redacted: " in sample_html or "<redacted: " in sample_html
    return text


def test_notebook_runs_headless_on_a_demo_warehouse(spark, tmp_path, monkeypatch):
    """About a minute: the notebook runs in a Jupyter kernel of its own, which starts its own
    Spark session (a JVM), as a user's notebook does."""
    run_notebook(spark, tmp_path, monkeypatch)
