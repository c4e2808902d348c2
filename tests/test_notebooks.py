"""The notebooks run top to bottom on a real kernel (what `scripts/demo --execute` does)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).parent.parent


def test_scripts_demo_execute_runs_the_quickstart(tmp_path: Path) -> None:
    target = tmp_path / "quickstart.executed.ipynb"
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "execute_notebook.py"),
            str(ROOT / "notebooks" / "quickstart.ipynb"),
            str(target),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    notebook = nbformat.read(target, as_version=4)
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [output for output in outputs if output.output_type == "error"]
    texts = " ".join(str(output.get("data", {}).get("text/plain", "")) for output in outputs)
    assert "'ready'" in texts and "'closed'" in texts


def test_committed_notebooks_carry_no_outputs() -> None:
    for path in (ROOT / "notebooks").glob("*.ipynb"):
        if path.name.endswith(".executed.ipynb"):
            continue
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, path
