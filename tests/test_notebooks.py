"""The notebooks run top to bottom on a real kernel (what `scripts/demo --execute` does)."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import nbformat
from conftest import execute_notebook

ROOT = Path(__file__).parent.parent


def execute(name: str, tmp_path: Path) -> list[dict]:
    """Run ``notebooks/NAME.ipynb`` as ``scripts/demo --execute`` does; return every cell output
    (each tagged with its cell's source as ``source``)."""
    target = tmp_path / f"{name}.executed.ipynb"
    execute_notebook(ROOT / "notebooks" / f"{name}.ipynb", target)
    notebook = nbformat.read(target, as_version=4)
    outputs = [
        {**output, "source": cell.source}
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    ]
    assert not [output for output in outputs if output["output_type"] == "error"]
    assert not [output for output in outputs if output.get("name") == "stderr"]
    return outputs


def plain(outputs: list[dict]) -> str:
    return " ".join(str(output.get("data", {}).get("text/plain", "")) for output in outputs)


def plain_and_streams(outputs: list[dict]) -> str:
    return " ".join(str(output.get("data", {}).get("text/plain", output.get("text", ""))).strip() for output in outputs)


def test_the_quickstart_runs_top_to_bottom_on_a_real_kernel(tmp_path: Path) -> None:
    outputs = execute("quickstart", tmp_path)
    text = plain(outputs)
    assert "Envelope demo/search_documents: ok" in text
    assert "('mcp_catalog_stale', 'mcp_catalog_stale', 'stale')" in text
    # the approval examples survive Run All: nothing voided them, they wait for a click
    assert "('pending', 'pending', 'pending', 'pending', 'ready')" in text
    # the notes store: a write approved in code is committed; the destructive call waits for its own approval
    assert "(2, '" in text and "('committed', {'id': 'note-1', 'count': 1})" in text
    assert "pending: approval of demo/delete_note" in text
    assert "Closed session 'changes'. 'closed'" in plain_and_streams(outputs)
    mimes = {mime for output in outputs for mime in output.get("data", {})}
    assert {"application/vnd.purra.catalog+json", "application/vnd.purra.envelope+json",
            "application/vnd.purra.raw-result+json", "application/vnd.jupyter.widget-view+json",
            "application/vnd.purra.widget+json"} <= mimes  # fmt: skip


def test_the_evaluate_notebook_runs_top_to_bottom_on_a_real_kernel(tmp_path: Path) -> None:
    outputs = execute("evaluate", tmp_path)
    text = plain(outputs)
    assert "True" in text  # the pinned digest held
    assert "Not/A_Zone" in text and "mcp_tool_error: no time for this zone" in text
    assert "ok 3, mcp_tool_error 1" in text  # the batch's summary
    assert "ok 16, mcp_invalid_arguments 1" in text and "at most 4 calls in flight" in text
    # evaluate's progress bar is text on stdout, which a reopened notebook shows as it ended (a widget bar would
    # be "Error displaying widget" without its kernel)
    batch = [output for output in outputs if "time_server.evaluate(" in output["source"]]
    assert not [output for output in batch if "application/vnd.jupyter.widget-view+json" in output.get("data", {})]
    assert any(output.get("name") == "stdout" and "100%|" in output["text"] for output in batch), batch


def test_committed_notebooks_carry_no_outputs() -> None:
    for path in (ROOT / "notebooks").glob("*.ipynb"):
        if path.name.endswith(".executed.ipynb"):
            continue
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, path


def test_every_server_a_notebook_starts_comes_with_the_lab_extra() -> None:
    """What `scripts/demo` installs (the `lab` extra) is enough for every notebook: each `-m MODULE` a notebook
    starts is this kit or a distribution the extra requires."""
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["lab"]
    required = {re.split(r"[<>=!~\[ ]", spec, maxsplit=1)[0].lower().replace("_", "-") for spec in extra}
    started: set[str] = set()
    for path in (ROOT / "notebooks").glob("*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            started |= set(re.findall(r"-m ([A-Za-z_][\w.]*)", cell.source)) if cell.cell_type == "code" else set()
    assert "mcp_server_time" in started  # the check sees the notebooks' servers
    for module in started - {"purra_jupyter.demo"}:
        [distribution] = packages_distributions()[module.split(".")[0]]
        assert distribution.lower().replace("_", "-") in required, (module, distribution)


def test_a_call_decided_later_leaves_its_record_in_its_own_cell() -> None:
    """The output of a pending call becomes its record when a later cell decides it (display ids), and the
    status line's output holds the session's last state: the executed file needs no kernel to be read."""
    import nbclient

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in (
        "import sys\n%load_ext purra_jupyter",
        "demo = %mcp_connect demo -- {sys.executable} -m purra_jupyter.demo",
        'pending = %mcp_call demo search_documents {"query": "PurrA", "limit": 2}\npending',
        'to_deny = %mcp_call demo search_documents {"query": "x", "limit": 1}\nto_deny',
        "pending.approve(); pending.wait(); to_deny.deny()\n%mcp_disconnect demo",
    )]  # fmt: skip
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    [connecting, status, instructions, summary] = notebook.cells[1].outputs
    assert re.fullmatch(r"connecting demo \(stdio: .*\) — connected in \d+\.\d s \(timeout 30 s\)",
                        connecting["data"]["text/plain"])  # fmt: skip
    assert status["data"]["text/plain"].startswith("closed · session: demo")
    assert summary["data"]["text/plain"].endswith("— %mcp_catalog demo shows the tools")
    assert instructions["data"]["text/plain"].startswith("the server's instructions (its own words, shown as text):")
    [approved] = notebook.cells[2].outputs
    [denied] = notebook.cells[3].outputs
    for output, word, how in ((approved, "approved", "approved with PendingCall.approve()"),
                              (denied, "denied", "denied with PendingCall.deny()")):  # fmt: skip
        assert "application/vnd.jupyter.widget-view+json" not in output["data"]
        decision = output["data"]["application/vnd.purra.envelope+json"]["decision"]
        assert decision["state"] == word and decision["how"] == how
        assert output["data"]["text/plain"].startswith(f"{word} ({how}) at ")
    assert approved["data"]["application/vnd.purra.envelope+json"]["errorCode"] is None
    assert denied["data"]["application/vnd.purra.envelope+json"]["errorCode"] == "mcp_approval_denied"


def test_run_all_twice_in_one_kernel_then_auto_approval_reads_without_a_widget() -> None:
    """A person's Run All, twice in one kernel: the second run reuses the open ``demo`` session instead of
    stopping at ``%mcp_connect``; then ``%config McpMagics.approval = "auto"`` applies to that open session."""
    import nbclient

    notebook = nbformat.read(ROOT / "notebooks" / "quickstart.ipynb", as_version=4)
    cells = list(enumerate(notebook.cells))
    client = nbclient.NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": "notebooks"}}
    )
    with client.setup_kernel():
        for _ in range(2):
            for index, cell in cells:
                client.execute_cell(cell, index)  # raises CellExecutionError on an error in the cell
        connect = next(cell for _, cell in cells if cell.source.startswith("demo = %mcp_connect"))
        assert "reusing the open session 'demo'" in plain_and_streams(connect.outputs)
        extra = nbformat.v4.new_code_cell(
            '%config McpMagics.approval = "auto"\n'
            'auto = %mcp_call demo search_documents {"query": "PurrA", "limit": 1}\n'
            "auto.ok, auto.structured['hits'][0]['id']"
        )
        notebook.cells.append(extra)
        client.execute_cell(extra, len(notebook.cells) - 1)
    shown = [output.get("data", {}) for output in extra.outputs]
    assert not [data for data in shown if "application/vnd.jupyter.widget-view+json" in data], shown
    assert "applies to new sessions and to the open ones: demo" in plain_and_streams(extra.outputs)
    assert "(True, " in plain(extra.outputs), extra.outputs
