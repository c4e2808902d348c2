"""The HTML the kit's fallbacks are made of: escaped, left-aligned, styled inline so that it reads on light and
dark pages alike (nbviewer, GitHub, VS Code, nbconvert), where none of our CSS is loaded.

Every piece of HTML the kit writes is built here, and escaping is by construction: ``tag`` escapes each child
that is a plain ``str`` and each attribute value; only an ``Html`` (what ``tag``, ``join`` and ``escape`` return)
goes in as it is. A server's text is a plain ``str``, so it cannot become markup by mistake; and escaping also
writes each control, bidirectional and invisible character as its escape (``visible.readable``: line breaks and tabs
stay), so no text reorders or hides what a person reads. ``Html`` is
markupsafe's ``Markup`` whose own operations (``+``, ``join``, ``%``, ``format``) escape the way ``tag`` does.

``Html`` is for building; what the kit hands out (a MIME bundle's ``text/html``, a widget's ``value``) is
``str(html)``, a plain string, so that a reader who adds a string of their own to it gets a string, not an
escaped copy of theirs.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from typing import Self

from markupsafe import Markup

from .visible import readable

# Colours for a state's word: in JupyterLab our stylesheet sets each variable per theme (light or dark), so the
# text meets WCAG AA on both; elsewhere the fallback (made for a light page) applies.
OK_COLOR = "var(--purra-ok-color, #1a7f37)"
WARN_COLOR = "var(--purra-warn-color, #9a6700)"
ERROR_COLOR = "var(--purra-error-color, #cf222e)"
# The style of a table cell; a wrapped one keeps its line breaks and wraps between words, breaking a word only
# when it is longer than the cell is wide (a server's unbroken token). ``overflow-wrap:anywhere`` lets a table
# squeeze such a column to one character (its words then break anywhere: "idempoten/t"), so a wrapped cell has a
# least width, ``WRAPPED_MIN_WIDTH`` unless a column asks for more.
CELL = "text-align:left;vertical-align:top;padding:2px 8px"
WRAPPED_MIN_WIDTH = "10em"
WRAPPED_CELL = f"{CELL};white-space:pre-wrap;overflow-wrap:anywhere;word-break:normal"

_NAME = re.compile(r"[a-z][a-z0-9]*")
_ATTRIBUTE = re.compile(r"[a-z][a-z0-9-]*")
_VOID = frozenset({"br", "img", "meta"})  # elements without content or end tag


class Html(Markup):
    """HTML that is safe to show as it is: made by this module, never by wrapping a plain string of unknown
    origin (``trusted`` is the one, named, way to take a renderer's finished HTML)."""

    __slots__ = ()

    @classmethod
    def escape(cls, s: object, /) -> Self:
        """``s`` as it is when it is already HTML, else its text made readable (``visible.readable``) and escaped
        (``& < > " '``; the entities of Python's ``html.escape``, which the kit has always written)."""
        if hasattr(s, "__html__"):
            return cls(s)
        return cls(html.escape(readable(str(s)), quote=True))


EMPTY = Html()
DOCTYPE = Html("<!doctype html>")


def escape(value: object) -> Html:
    """``value``'s text, escaped (an ``Html`` stays as it is)."""
    return Html.escape(value)


def trusted(finished: str) -> Html:
    """HTML a renderer already made, taken as it is: a MIME bundle's ``text/html`` (ours, or pandas' table,
    whose cells pandas escapes). Never for a string that holds anyone's text."""
    return Html(finished)


def join(parts: Iterable[str | None], separator: str = "") -> Html:
    """The parts one after another, each escaped unless it is ``Html``; ``None`` is left out."""
    return escape(separator).join(part for part in parts if part is not None)


def tag(name: str, *children: str | None, **attributes: str | None) -> Html:
    """``<name attributes>children</name>``: every plain-``str`` child escaped, ``Html`` kept, ``None`` left out;
    every attribute value escaped and quoted (``class_`` for ``class``, ``_`` for ``-``; ``None`` leaves the
    attribute out). The names are the code's, never data: anything but a plain lowercase name is refused."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"not an element name: {name!r}")
    opening = [name]
    for key, value in attributes.items():
        attribute = key.rstrip("_").replace("_", "-")
        if not _ATTRIBUTE.fullmatch(attribute):
            raise ValueError(f"not an attribute name: {key!r}")
        if value is not None:
            opening.append(f"{attribute}='{escape(value)}'")
    start = Html(f"<{' '.join(opening)}>")
    if name in _VOID:
        if any(child is not None for child in children):
            raise ValueError(f"<{name}> has no content")
        return start
    return start + join(children) + Html(f"</{name}>")


def th(*children: str | None) -> Html:
    """A header cell."""
    return tag("th", *children, style=CELL)


def td(*children: str | None, wrapped: bool = False, min_width: str = WRAPPED_MIN_WIDTH) -> Html:
    """A data cell; ``wrapped`` for free text (a description, a detail, a server's value), at least ``min_width``
    wide (a CSS length) so that its words are not broken."""
    return tag("td", *children, style=f"{WRAPPED_CELL};min-width:{min_width}" if wrapped else CELL)


def table(columns: Iterable[str], rows: Iterable[Html], css_class: str | None = None) -> Html:
    """A table with a header row of ``columns`` (escaped) and the given rows (``tag("tr", ...)``)."""
    head = tag("thead", tag("tr", join(th(column) for column in columns)))
    return tag("table", head, tag("tbody", join(rows)), class_=css_class)


def pre(text: str) -> Html:
    """A monospace block of text, wrapped between words (a word only when it is longer than the line; JupyterLab's
    outputs would break anywhere), never interpreted."""
    return tag("pre", text, style="white-space:pre-wrap;word-break:normal;overflow-wrap:anywhere;text-align:left")


def key_value_table(rows: Iterable[tuple[str, str]], css_class: str) -> Html:
    """A two-column table (label, value), both escaped."""
    return tag("table", join(tag("tr", th(key), td(value, wrapped=True)) for key, value in rows), class_=css_class)


__all__ = [
    "CELL",
    "DOCTYPE",
    "EMPTY",
    "ERROR_COLOR",
    "OK_COLOR",
    "WARN_COLOR",
    "WRAPPED_CELL",
    "WRAPPED_MIN_WIDTH",
    "Html",
    "escape",
    "join",
    "key_value_table",
    "pre",
    "table",
    "tag",
    "td",
    "th",
    "trusted",
]
