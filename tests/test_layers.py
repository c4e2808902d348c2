"""The package's layers: imports run one way (bottom to top), and no module touches another's privates.

The walk reads every import in the AST (module level, inside functions, under ``TYPE_CHECKING``), so an
upward import cannot hide in a function. The checker is tested on a package made to break each rule.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT

PACKAGE = "purra_jupyter"
# Bottom to top (DESIGN §3). A module may import its own layer's or any lower layer's modules.
LAYERS = [
    (
        "wire",
        "errors",
        "markup",
        "names",
        "raw_schema",
        "session_log",
        "activity",
        "app_meta",
        "transcript",
        "junit",
        "charts",
        "untrusted",
        "egress",
        "surfaces",
    ),
    ("config",),
    ("ingress",),
    ("runner",),
    ("oauth",),
    ("purra_adapter",),
    ("transport",),
    ("http_transport", "sse", "stdio_transport", "memory_transport"),
    ("tracking",),
    ("sdk_errors",),
    ("connection",),
    ("catalog",),
    ("bindings",),
    ("envelope",),
    ("offerings",),
    ("apps",),
    ("calls",),
    ("checkpoint",),
    ("batches",),
    ("replays",),
    ("ui",),
    ("session",),
    ("pool",),
    ("cli", "mock"),
    ("magics",),
    ("__init__",),
]
# The demo server is a program of its own: it imports nothing of the kit and nothing of the kit imports it.
STANDALONE = {"demo"}
# Names outside the layers' own (Python's, IPython's display protocol) that any module may use.
ALLOWED_PRIVATE = {"_exit", "_repr_mimebundle_", "_render_traceback_", "_repr_html_", "_ipython_display_"}


@dataclass(frozen=True)
class Finding:
    module: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line}: {self.what}"


def layer_of(module: str) -> str:
    """``purra_jupyter.ui.forms`` -> ``ui``; ``purra_jupyter`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path, root: Path) -> str:
    relative = path.relative_to(root.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(node: ast.AST, module: str, is_package: bool, package: str) -> list[str]:
    """The package modules an import statement names (``from . import x`` names ``x``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.split(".")[0] == package]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join([*base, *([node.module] if node.module else [])])
    else:
        target = node.module or ""
    if target.split(".")[0] != package:
        return []
    if target == package or node.module is None:
        return [f"{target}.{alias.name}" for alias in node.names]
    return [target]


def check(root: Path, layers: list[tuple[str, ...]]) -> list[Finding]:
    """Every upward import and every private attribute of another object that ``root``'s modules use
    (``root`` is a package directory; its name is the package's)."""
    package = root.name
    rank = {name: index for index, names in enumerate(layers) for name in names}
    findings = []
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = layer_of(module)
        for node in ast.walk(tree):
            for target in imported(node, module, path.name == "__init__.py", package):
                other = layer_of(target)
                if (own in STANDALONE) != (other in STANDALONE) and target != package:
                    findings.append(Finding(module, node.lineno, f"imports {target} across the demo boundary"))
                elif own in rank and other in rank and rank[other] > rank[own]:
                    findings.append(Finding(module, node.lineno, f"imports {target}, a higher layer ({other})"))
            if isinstance(node, ast.Attribute) and _private(node.attr) and not _own_object(node.value):
                findings.append(Finding(module, node.lineno, f"touches the private attribute .{node.attr}"))
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("purra", "purra_mcp"):
                for alias in node.names:
                    if _private(alias.name) and module != f"{package}.purra_adapter":
                        findings.append(Finding(module, node.lineno, f"imports purra's private {alias.name}"))
    return findings


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in ALLOWED_PRIVATE


def _own_object(value: ast.expr) -> bool:
    """``self._x``, ``cls._x`` and ``super()._x`` are a class's own business."""
    if isinstance(value, ast.Name):
        return value.id in ("self", "cls")
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super"


def test_the_package_imports_run_one_way_and_keep_to_public_names() -> None:
    findings = check(ROOT / PACKAGE, LAYERS)
    assert findings == [], "\n".join(map(str, findings))


def test_every_module_has_a_layer() -> None:
    known = {name for names in LAYERS for name in names} | STANDALONE
    found = {layer_of(module_name(path, ROOT / PACKAGE)) for path in (ROOT / PACKAGE).rglob("*.py")}
    assert found <= known, f"modules without a layer in LAYERS (and DESIGN §3): {sorted(found - known)}"


TYPE_CHECKING_IMPORT = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import calls\n"


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        ("connection.py", "def f():\n    from .session import connect\n", "imports pkg.session, a higher layer"),
        ("catalog.py", TYPE_CHECKING_IMPORT, "imports pkg.calls, a higher layer"),
        ("ui/forms.py", "from .. import magics\n", "imports pkg.magics, a higher layer"),
        ("calls.py", "import pkg.session\n", "imports pkg.session, a higher layer"),
        ("calls.py", "def f(session):\n    return session._bindings\n", "touches the private attribute ._bindings"),
        ("calls.py", "from purra_mcp import _request\n", "imports purra's private _request"),
        ("demo/server.py", "from pkg import session\n", "across the demo boundary"),
    ],
)
def test_the_checker_finds_each_kind_of_break(tmp_path: Path, path: str, source: str, expected: str) -> None:
    package = tmp_path / "pkg"
    for name in ("__init__.py", "wire.py", "connection.py", "catalog.py", "calls.py", "session.py", "magics.py",
                 "ui/__init__.py", "ui/forms.py", "demo/__init__.py", "demo/server.py"):  # fmt: skip
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text("")
    clean = check(package, LAYERS)
    (package / path).write_text(source)
    findings = [str(finding) for finding in check(package, LAYERS)]
    assert clean == []
    assert any(expected in finding for finding in findings), findings
