"""A Binder-equivalent environment: a fresh virtual environment built only from binder/ (see the
``binder_env`` fixture) lists our extension enabled and runs the quickstart."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import BINDER_BUILD_GUARD, ROOT, BinderEnv


@pytest.mark.timeout(BINDER_BUILD_GUARD)  # the session's Binder environment is built in this test's setup
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


def test_repo2docker_plans_a_supported_python_and_the_binder_steps() -> None:
    """Binder's own builder, asked without Docker, reads binder/: a Python the kit supports (runtime.txt; without it
    repo2docker picks 3.10), then requirements.txt, then postBuild."""
    run = subprocess.run(
        [str(Path(sys.executable).parent / "repo2docker"), "--no-build", "--debug", str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    plan = run.stdout + run.stderr
    assert run.returncode == 0, plan[-2000:]
    assert "Python version unspecified" not in plan
    chosen = re.search(r"Building conda environment for python=(\d+)\.(\d+)", plan)
    assert chosen, plan[-2000:]
    floor = re.search(r'requires-python = ">=(\d+)\.(\d+)"', (ROOT / "pyproject.toml").read_text())
    assert floor and tuple(map(int, chosen.groups())) >= tuple(map(int, floor.groups())), chosen.group(0)
    requirements = plan.index('pip install --no-cache-dir -r "binder/requirements.txt"')
    assert requirements < plan.index("RUN ./binder/postBuild")  # the kit is installed after its requirements
