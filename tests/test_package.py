"""The public surface and the cost of importing it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import subprocess
import sys

from conftest import ROOT

import purra_jupyter as pj

PUBLIC = {
    # what a person calls
    "__version__",
    "allow_any_scope",
    "assert_checks",
    "connect",
    "evaluate",
    "load_servers",
    "replay",
    "sessions",
    # what a person builds, holds or catches
    "Engine",
    "McpSession",
    "McpSessionError",
    "OAuth",
    "ServerConfig",
    # what the API gives back
    "AppView",
    "BindingEntry",
    "Bindings",
    "Catalog",
    "Chart",
    "Envelope",
    "EvaluationSummary",
    "LogEntry",
    "OfferingForm",
    "Offerings",
    "PendingCall",
    "PromptMessages",
    "RawResult",
    "ReplaySummary",
    "ResourceContents",
    "SchemaForm",
    "SessionLog",
    "SessionStatus",
    "SharedReason",
    "ToolApp",
    "ToolVerdict",
    "Transcript",
    "TranscriptMessage",
    "ViewedCall",
    "WriteTerms",
}


def test_public_names_are_pinned() -> None:
    assert pj.__all__ == sorted(pj.__all__)
    assert set(pj.__all__) == PUBLIC
    for function, module in ((pj.evaluate, "_session.pool"), (pj.replay, "_session.opening")):  # none shadowed
        assert callable(function) and function.__module__ == f"purra_jupyter.{module}"


def _kit_classes() -> dict[str, type]:
    """Every class the package defines (the demo server's aside), by name."""
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(pj.__path__, "purra_jupyter."):
        if info.name.startswith("purra_jupyter.demo"):
            continue
        module = importlib.import_module(info.name)
        found.update({name: value for name, value in vars(module).items()
                      if inspect.isclass(value) and value.__module__ == module.__name__})  # fmt: skip
    return found


def _returned(owner: object) -> set[str]:
    """The names in the return annotations of ``owner``'s public functions, methods and properties."""
    members = [owner] if inspect.isfunction(owner) else [value for name, value in vars(owner).items()
                                                       if not name.startswith("_")]  # fmt: skip
    names: set[str] = set()
    for member in members:
        function = member.fget if isinstance(member, property) else member
        annotation = getattr(function, "__annotations__", {}).get("return")
        names |= set(re.findall(r"[A-Za-z_]\w*", str(annotation or "")))
    return names


def test_every_type_the_api_gives_back_is_public() -> None:
    """What a public function or a public class's method returns, when the kit defines it, is in ``__all__``:
    a user can name it (in an annotation, an ``isinstance``) without reaching into a private module."""
    classes = _kit_classes()
    public = {name: getattr(pj, name) for name in pj.__all__ if name != "__version__"}
    returned = set().union(*(_returned(value) for value in public.values()))
    assert {name for name in returned if name in classes} <= set(public), sorted(
        returned & classes.keys() - set(public)
    )


def test_the_api_reference_documents_exactly_the_public_names() -> None:
    """docs/api.rst documents ``purra_jupyter``'s names, all of them, and nothing from a private module."""
    text = (ROOT / "docs" / "api.rst").read_text()
    assert re.findall(r"^\.\. currentmodule:: (\S+)", text, flags=re.MULTILINE) == ["purra_jupyter"]
    documented = re.findall(r"^\.\. auto(?:class|function|exception):: (\w+)", text, flags=re.MULTILINE)
    assert sorted(documented) == sorted(set(documented)) == sorted(PUBLIC - {"__version__"})


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
        "True purra_jupyter._base.config",
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


def test_the_event_loop_keeps_its_old_name() -> None:
    """``from purra_jupyter import runner`` (tools that watch the kit's loop use it) is the one loop module, loaded on
    first use, and no public name."""
    from purra_jupyter import runner
    from purra_jupyter._base import runner as loop

    assert runner is loop and "runner" not in pj.__all__
