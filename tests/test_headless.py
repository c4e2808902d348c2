"""A headless run fails when a check fails: ``pj.assert_checks(frame, junit=...)`` raises ``mcp_checks_failed`` for
rows that did not pass and writes a JUnit report either way; ``jupyter execute`` of a notebook ending with it exits
non-zero exactly when a row failed, as the docs' CI recipe says."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import demo_in_memory

import purra_jupyter as pj
from purra_jupyter._base.wire import CHECKS_FAILED, CONFIG_INVALID

ROWS = [
    {"query": "PurrA", "limit": 2},
    {"query": "nothing like this anywhere", "limit": 2},
    {"query": "MCP", "limit": 1},
]


def has_hits(envelope: Any) -> bool | str:
    hits = (envelope.structured or {}).get("hits", [])
    return bool(hits) or "no hits"


def test_assert_checks_fails_on_the_rows_that_did_not_pass_and_writes_junit(tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    with pj.connect(demo_in_memory(), approval="auto") as demo:
        demo.bind("search_documents")
        frame = demo.evaluate("search_documents", ROWS, check=has_hits)
    assert frame["passed"].tolist() == [True, False, True]
    with pytest.raises(pj.McpSessionError) as raised:
        pj.assert_checks(frame, junit=report)
    assert raised.value.code == CHECKS_FAILED
    assert raised.value.message == "1 of 3 rows of search_documents on demo failed: row 1: no hits."
    suite = ElementTree.parse(report).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "0")
    [failed] = [case for case in suite.iter("testcase") if case.find("failure") is not None]
    assert failed.get("name", "").startswith('row 1: {"query": "nothing like this anywhere"')
    assert failed.find("failure").get("message") == "no hits"  # type: ignore[union-attr]
    passing = frame[frame["passed"]]
    assert pj.assert_checks(passing, junit=report).tool == "search_documents"  # the summary: all of these pass
    assert ElementTree.parse(report).getroot().get("failures") == "0"


def test_without_a_check_a_row_passes_when_it_is_ok() -> None:
    with pj.connect(demo_in_memory(), approval="auto") as demo:
        demo.bind("fail")
        frame = demo.evaluate("fail", [{"message": "as asked"}, {"message": "again"}])
    with pytest.raises(pj.McpSessionError) as raised:
        pj.assert_checks(frame)
    assert raised.value.message.startswith("2 of 2 rows of fail on demo failed: row 0: mcp_tool_error: ")


def test_a_batch_still_waiting_for_approval_has_no_result_to_assert() -> None:
    with pj.connect(demo_in_memory()) as demo:
        demo.bind("search_documents")
        pending = demo.evaluate("search_documents", ROWS)
        with pytest.raises(pj.McpSessionError) as raised:
            pj.assert_checks(pending)
        pending.deny()
    assert raised.value.code == CONFIG_INVALID and "approve=True, for a headless run" in raised.value.message


NOTEBOOK = [
    "import sys\nimport purra_jupyter as pj",
    'demo = pj.connect(pj.ServerConfig("demo", command=sys.executable, args=["-m", "purra_jupyter.demo"]))\n'
    'demo.bind("search_documents")',
    "rows = {rows!r}\n"
    'frame = demo.evaluate("search_documents", rows, approve=True, '
    'check=lambda e: bool(e.structured["hits"]) or "no hits")',
    'pj.assert_checks(frame, junit="report.xml")',
]


@pytest.mark.parametrize(("rows", "exits"), [(ROWS[::2], 0), (ROWS, 1)])
def test_jupyter_execute_of_an_evaluation_notebook_fails_when_a_check_fails(
    tmp_path: Path, rows: list[dict[str, object]], exits: int
) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell(source.format(rows=rows)) for source in NOTEBOOK]
    nbformat.write(notebook, tmp_path / "evaluation.ipynb")
    jupyter = Path(sys.executable).parent / "jupyter"
    run = subprocess.run([str(jupyter), "execute", "evaluation.ipynb"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=180)  # fmt: skip
    assert (run.returncode != 0) == bool(exits), run.stderr[-2000:]
    suite = ElementTree.parse(tmp_path / "report.xml").getroot()
    assert suite.get("tests") == str(len(rows)) and suite.get("failures") == str(exits)
    if exits:
        assert f"{CHECKS_FAILED}: 1 of 3 rows of search_documents on demo failed: row 1: no hits." in run.stderr
