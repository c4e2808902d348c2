"""The public surface and the cost of importing it."""

from __future__ import annotations

import subprocess
import sys

import purra_jupyter as pj


def test_public_names_are_pinned() -> None:
    assert pj.__all__ == sorted(pj.__all__)
    assert set(pj.__all__) == {
        "McpSession",
        "McpSessionError",
        "OAuth",
        "ServerConfig",
        "__version__",
        "allow_any_scope",
        "assert_checks",
        "connect",
        "evaluate",
        "load_servers",
        "replay",
        "sessions",
    }
    for function, module in ((pj.evaluate, "pool"), (pj.replay, "session")):  # (no module of the package shadows them)
        assert callable(function) and function.__module__ == f"purra_jupyter.{module}"


def test_import_leaves_the_mcp_sdk_unloaded() -> None:
    probe = "import sys, purra_jupyter; print(sorted(m for m in ('mcp', 'purra_mcp', 'pandas') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_load_ext_leaves_ipywidgets_unloaded() -> None:
    """The widgets load with the first widget, not with ``%load_ext`` (ipywidgets is slow to import)."""
    probe = (
        "import sys\nfrom IPython.core.interactiveshell import InteractiveShell\n"
        "InteractiveShell.instance().run_line_magic('load_ext', 'purra_jupyter')\n"
        "print('ipywidgets' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_every_public_name_loads_on_first_use() -> None:
    probe = (
        "import purra_jupyter as pj\n"
        "print([name for name in pj.__all__ if getattr(pj, name, None) is None])\n"
        "from purra_jupyter import connect, ServerConfig\n"
        "print(connect is pj.connect, ServerConfig.__module__)\n"
        "try:\n"
        "    pj.no_such_name\n"
        "except AttributeError as exc:\n"
        "    print(exc)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [
        "[]",
        "True purra_jupyter.config",
        "module 'purra_jupyter' has no attribute 'no_such_name'",
    ]


def test_the_demo_server_imports_the_sdk_and_none_of_the_client() -> None:
    """The demo server (``python -m purra_jupyter.demo``) starts as fast as the SDK allows: what it serves with,
    not the kit's client side (its sessions, traitlets, pandas, the HTTP client's own modules)."""
    probe = (
        "import sys, purra_jupyter.demo.server, purra_jupyter.demo.transports\n"
        "kit = [m for m in sys.modules if m.startswith('purra_jupyter.') and not m.startswith('purra_jupyter.demo')]\n"
        "others = [m for m in ('traitlets', 'pandas', 'purra_mcp', 'ipywidgets') if m in sys.modules]\n"
        "print(sorted(kit), others, 'mcp' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] [] True"


def test_every_library_the_package_imports_is_declared_in_its_dependencies() -> None:
    """A module of the kit (the demo server's included) that imports a library the wheel does not declare works
    here only because something else installed it."""
    import ast
    import importlib.metadata
    import pathlib
    import re
    import tomllib

    root = pathlib.Path(pj.__file__).parent
    imported: set[str] = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    project = tomllib.loads((root.parent / "pyproject.toml").read_text())["project"]
    declared = {re.split(r"[<>=!~\[ ;]", spec, maxsplit=1)[0].lower().replace("_", "-")
                for spec in project["dependencies"]}  # fmt: skip
    distributions = importlib.metadata.packages_distributions()
    undeclared = {
        name: distributions[name]
        for name in imported - set(sys.stdlib_module_names) - {"purra_jupyter"}
        if not {d.lower().replace("_", "-") for d in distributions.get(name, [name])} & declared
    }
    assert undeclared == {}
