"""The package's layers: imports run one way (bottom to top), and no module touches another's privates.

The walk reads every import in the AST (module level, inside functions, under ``TYPE_CHECKING``), so an
upward import cannot hide in a function. The checker is tested on a package made to break each rule.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT

PACKAGE = "purra_jupyter"
# Bottom to top (DESIGN §3), sub-package by sub-package as docs/architecture.md draws the tree. A module may import
# its own layer's or any lower layer's modules; a layer named by a sub-package alone (``_ui``) holds all its modules.
LAYERS = [
    # _base: the foundations
    (
        "_base.wire",
        "_base.changes",
        "_base.kept",
        "_base.errors",
        "_base.markup",
        "_base.visible",
        "_base.raw_schema",
        "_base.session_log",
        "_base.activity",
        "_base.app_rules",
        "_base.transcript",
        "_base.junit",
        "_base.charts",
        "_base.untrusted",
        "_base.egress",
        "_base.frames",
        "_base.surfaces",
    ),
    ("_base.config",),
    ("_base.consent",),
    ("_base.runner",),
    # _transports: how a session reaches its server
    ("_transports.ingress",),
    ("_transports.oauth",),
    ("_transports.base",),
    ("_transports.http", "_transports.sse", "_transports.stdio", "_transports.memory"),
    # _connection: one connection's life
    ("_connection.purra_adapter",),
    ("_connection.tracking",),
    ("_connection.seam",),
    ("_connection.handshake", "_connection.notices", "_connection.questions"),
    ("_connection.connection",),
    # _purra: the PurrA path
    ("_purra.reasons",),
    ("_purra.catalog",),
    ("_purra.listing",),
    ("_purra.bindings",),
    ("_purra.envelope",),
    ("_purra.calls",),
    # _beside: beside the contract
    ("_beside.offerings",),
    ("_beside.views",),
    # _evaluation: many calls at once
    ("_evaluation.checkpoint",),
    ("_evaluation.batches",),
    ("_evaluation.replays",),
    # _ui: the notebook's widgets
    ("_ui",),
    # _session: the object a person holds
    ("_session",),
    # the public modules
    ("cli", "mock"),
    ("magics",),
    ("__init__",),
]
# The sub-packages, bottom to top: each is one band of LAYERS, in this order.
PACKAGES = ("_base", "_transports", "_connection", "_purra", "_beside", "_evaluation", "_ui", "_session")
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


def layer_of(module: str, layers: list[tuple[str, ...]] = LAYERS) -> str:
    """``purra_jupyter._ui.forms`` -> ``_ui`` (its sub-package's layer), ``purra_jupyter._base.wire`` ->
    ``_base.wire``; ``purra_jupyter`` -> ``__init__``."""
    parts = module.split(".")[1:]
    if not parts:
        return "__init__"
    known = {name for names in layers for name in names}
    return next((name for n in (2, 1) if (name := ".".join(parts[:n])) in known), parts[0])


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
    return [target, *(f"{target}.{alias.name}" for alias in node.names)]


def check(root: Path, layers: list[tuple[str, ...]]) -> list[Finding]:
    """Every upward import and every private attribute of another object that ``root``'s modules use
    (``root`` is a package directory; its name is the package's)."""
    package = root.name
    rank = {name: index for index, names in enumerate(layers) for name in names}
    findings = []
    modules = {module_name(path, root) for path in root.rglob("*.py")}
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = layer_of(module, layers)
        for node in ast.walk(tree):
            for target in _modules(imported(node, module, path.name == "__init__.py", package), modules):
                other = layer_of(target, layers)
                if (own in STANDALONE) != (other in STANDALONE) and target != package:
                    findings.append(Finding(module, node.lineno, f"imports {target} across the demo boundary"))
                elif own in rank and other in rank and rank[other] > rank[own]:
                    findings.append(Finding(module, node.lineno, f"imports {target}, a higher layer ({other})"))
            if isinstance(node, ast.Attribute) and _private(node.attr) and not _own_object(node.value):
                findings.append(Finding(module, node.lineno, f"touches the private attribute .{node.attr}"))
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("purra", "purra_mcp"):
                for alias in node.names:
                    if _private(alias.name) and module != f"{package}._connection.purra_adapter":
                        findings.append(Finding(module, node.lineno, f"imports purra's private {alias.name}"))
    return findings


def _modules(names: list[str], modules: set[str]) -> list[str]:
    """Of what an import names (``from .x import y`` names ``x`` and ``x.y``), the modules; ``x.y`` when ``y`` is
    one, else ``x``."""
    found = [name for name in names[1:] if name in modules]
    return found or names[:1]


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
    modules = [module_name(path, ROOT / PACKAGE) for path in (ROOT / PACKAGE).rglob("*.py")]
    found = {layer_of(module) for module in modules if module.count(".") != 1 or module.split(".")[1] not in PACKAGES}
    assert found <= known, f"modules without a layer in LAYERS (and DESIGN §3): {sorted(found - known)}"


def test_the_tree_shows_the_layers() -> None:
    """Each sub-package is one band of layers, in the order the architecture's diagram draws them (top layer
    first), which names every module of each; a sub-package's ``__init__`` holds only its docstring."""
    bands = [layer.split(".")[0] for names in LAYERS for layer in names if layer.split(".")[0] in PACKAGES]
    assert list(dict.fromkeys(bands)) == list(PACKAGES) and bands == sorted(bands, key=PACKAGES.index)
    found = {path.parent.name for path in (ROOT / PACKAGE).glob("*/__init__.py")} - STANDALONE
    assert found == set(PACKAGES)
    for package in PACKAGES:
        init = ast.parse((ROOT / PACKAGE / package / "__init__.py").read_text())
        assert len(init.body) == 1 and isinstance(init.body[0], ast.Expr), package
    text = (ROOT / "docs" / "architecture.md").read_text()
    diagram = text[text.index("```text\npurra_jupyter/") :].split("```")[1]
    drawn = re.findall(r"^\W*(_[a-z]+)/(.*)$", diagram, flags=re.MULTILINE)
    assert [package for package, _ in drawn] == list(reversed(PACKAGES)), drawn
    for package, line in drawn:
        modules = {path.stem for path in (ROOT / PACKAGE / package).glob("*.py")} - {"__init__"}
        assert set(re.findall(r"[a-z_]+", line)) >= modules, (package, line)
    tops = {path.name for path in (ROOT / PACKAGE).glob("*.py")}
    assert all(name in diagram for name in tops), tops


TYPE_CHECKING_IMPORT = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import calls\n"


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        ("_connection/connection.py", "def f():\n    from .._session.session import connect\n",
         "imports pkg._session.session, a higher layer"),
        ("_purra/catalog.py", TYPE_CHECKING_IMPORT, "imports pkg._purra.calls, a higher layer"),
        ("_ui/forms.py", "from .. import magics\n", "imports pkg.magics, a higher layer"),
        ("_purra/calls.py", "import pkg._session.session\n", "imports pkg._session.session, a higher layer"),
        ("_purra/calls.py", "from .._session import session\n", "imports pkg._session.session, a higher layer"),
        ("_purra/calls.py", "def f(session):\n    return session._bindings\n", "private attribute ._bindings"),
        ("_purra/calls.py", "from purra_mcp import _request\n", "imports purra's private _request"),
        ("demo/server.py", "from pkg._session import session\n", "across the demo boundary"),
    ],
)  # fmt: skip
def test_the_checker_finds_each_kind_of_break(tmp_path: Path, path: str, source: str, expected: str) -> None:
    package = tmp_path / "pkg"
    for name in ("__init__.py", "_base/__init__.py", "_base/wire.py", "_connection/__init__.py",
                 "_connection/connection.py", "_purra/__init__.py", "_purra/catalog.py", "_purra/calls.py",
                 "_session/__init__.py", "_session/session.py", "_ui/__init__.py", "_ui/forms.py", "magics.py",
                 "demo/__init__.py", "demo/server.py"):  # fmt: skip
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text("")
    clean = check(package, LAYERS)
    (package / path).write_text(source)
    findings = [str(finding) for finding in check(package, LAYERS)]
    assert clean == []
    assert any(expected in finding for finding in findings), findings
