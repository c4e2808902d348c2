"""A Binder-equivalent environment: a fresh virtual environment built only from binder/ runs the quickstart."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).parent.parent


def test_a_fresh_environment_from_binder_runs_the_quickstart(tmp_path: Path) -> None:
    venv = tmp_path / "binder-env"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}
    env.pop("PYTHONPATH", None)

    def run(*command: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done

    run(str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-r", "binder/requirements.txt")
    built = run("bash", "binder/postBuild")  # postBuild ends with `jupyter labextension list`
    listed = re.sub(r"\x1b\[[0-9;]*m", "", built.stdout + built.stderr)
    assert re.search(r"purra-jupyter-renderers v0\.1\.0 enabled\s+OK", listed), listed
    version = run(str(venv / "bin" / "python"), "-c", "import jupyterlab; print(jupyterlab.__version__)").stdout
    assert version.startswith("4.4.")
    kernels = json.loads(run(str(venv / "bin" / "jupyter"), "kernelspec", "list", "--json").stdout)["kernelspecs"]
    assert kernels["python3"]["resource_dir"].startswith(str(venv))  # the notebook runs in the Binder env
    target = tmp_path / "quickstart.ipynb"
    run(str(venv / "bin" / "jupyter"), "nbconvert", "--to", "notebook", "--execute", "--output", str(target),
        str(ROOT / "notebooks" / "quickstart.ipynb"))  # fmt: skip
    notebook = nbformat.read(target, as_version=4)
    errors = [
        o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs if o.output_type == "error"
    ]
    assert errors == []
