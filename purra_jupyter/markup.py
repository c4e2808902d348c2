"""The HTML the kit's fallbacks are made of: escaped, left-aligned, styled inline so that it reads on light and
dark pages alike (nbviewer, GitHub, VS Code, nbconvert), where none of our CSS is loaded."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

# Colours for a state's word: in JupyterLab our stylesheet sets each variable per theme (light or dark), so the
# text meets WCAG AA on both; elsewhere the fallback (made for a light page) applies.
OK_COLOR = "var(--purra-ok-color, #1a7f37)"
WARN_COLOR = "var(--purra-warn-color, #9a6700)"
ERROR_COLOR = "var(--purra-error-color, #cf222e)"
CELL = "style='text-align:left;vertical-align:top;padding:2px 8px'"
WRAPPED_CELL = "style='text-align:left;vertical-align:top;padding:2px 8px;white-space:pre-wrap;overflow-wrap:anywhere'"


def pre(text: str) -> str:
    """A monospace block of text, wrapped, never interpreted."""
    return f"<pre style='white-space:pre-wrap;text-align:left'>{escape(text)}</pre>"


def key_value_table(rows: Iterable[tuple[str, str]], css_class: str) -> str:
    """A two-column table (label, value), both escaped."""
    body = "".join(f"<tr><th {CELL}>{escape(k)}</th><td {WRAPPED_CELL}>{escape(v)}</td></tr>" for k, v in rows)
    return f"<table class='{css_class}'>{body}</table>"
