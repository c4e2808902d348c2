"""``.. magics-reference::``: every ``%mcp_*`` magic and ``%config McpMagics`` option, read from the magics'
own argument parsers and traits, so the reference cannot drift from what ``--help`` says."""

from __future__ import annotations

import inspect
import re
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

OPTION_SECTIONS = re.compile(r"^(positional arguments|options):$", re.MULTILINE)


def _magics() -> list[tuple[str, str, Any, bool]]:
    """(prefix, name, method, also a cell magic) of each magic ``%load_ext purra_jupyter`` registers, ``%%`` for a
    cell magic only, sorted by name."""
    from purra_jupyter.magics import MAGICS

    found = []
    for magics in MAGICS:
        line, cell = magics.magics["line"], magics.magics["cell"]
        for name in {*line, *cell}:
            found.append(("%" if name in line else "%%", name, getattr(magics, name), name in cell))
    return sorted(found, key=lambda magic: magic[1])


def _options_text(parser: Any) -> str:
    """The usage and the options of a magic's ``--help``, without the description between them (IPython's
    formatter writes the usage as a reST literal block: its ``::`` is dropped here)."""
    usage = parser.format_usage().strip().removeprefix("::").strip()
    help_text = parser.format_help()
    sections = OPTION_SECTIONS.search(help_text)
    options = help_text[sections.start() :] if sections else ""
    return f"{usage}\n\n{options.rstrip()}"


class MagicsReference(SphinxDirective):
    """One section per magic: its docstring (as reST), then its usage and options as ``--help`` prints them."""

    def run(self) -> list[nodes.Node]:
        from purra_jupyter.magics import McpMagics

        lines: list[str] = []
        for prefix, name, method, in_cell in _magics():
            title = f"``{prefix}{name}``"
            cell = " (also ``%%" + name + "``, the JSON in the cell)" if in_cell else ""
            lines += [title + cell, "-" * (len(title + cell) + 4), ""]
            lines += [*inspect.cleandoc(method.parser.description or "").splitlines(), ""]
            lines += [".. code-block:: text", ""]
            lines += [f"    {line}" for line in _options_text(method.parser).splitlines()]
            lines += [""]
        lines += ["``%config McpMagics``", "-" * 24, ""]
        for trait_name, trait in sorted(McpMagics.class_traits(config=True).items()):
            lines += [f"``McpMagics.{trait_name}`` (default ``{trait.default_value!r}``)", f"    {trait.help}", ""]
        container = nodes.section()
        nested_parse_with_titles(self.state, StringList(lines, source="magics_reference"), container)
        return list(container.children)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("magics-reference", MagicsReference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
