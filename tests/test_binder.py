"""A Binder-equivalent environment: a fresh virtual environment built only from binder/ (see the
``binder_env`` fixture) lists our extension enabled and runs the quickstart."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
from conftest import ROOT, BinderEnv


def test_a_fresh_environment_from_binder_runs_the_quickstart(binder_env: BinderEnv, tmp_path: Path) -> None:
    listed = re.sub(r"\x1b\[[0-9;]*m", "", binder_env.post_build_output)  # postBuild ends with the list
    assert re.search(r"purra-jupyter-renderers v0\.1\.0 enabled\s+OK", listed), listed
    assert binder_env.run("python", "-c", "import jupyterlab; print(jupyterlab.__version__)").stdout.startswith("4.4.")
    kernels = json.loads(binder_env.run("jupyter", "kernelspec", "list", "--json").stdout)["kernelspecs"]
    assert kernels["python3"]["resource_dir"].startswith(str(binder_env.venv))  # the notebook runs in the Binder env
    target = tmp_path / "quickstart.ipynb"
    binder_env.run("jupyter", "nbconvert", "--to", "notebook", "--execute", "--output", str(target),
                   str(ROOT / "notebooks" / "quickstart.ipynb"))  # fmt: skip
    notebook = nbformat.read(target, as_version=4)
    errors = [
        o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs if o.output_type == "error"
    ]
    assert errors == []
