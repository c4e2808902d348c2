"""The doors through which server and argument text leaves the kit, one per medium, each typed so nothing else fits.

- Notebook HTML: ``markup.Html`` (escaped by construction), put into a MIME bundle by ``bundle``.
- Plain text a cell shows (a bundle's ``text/plain``, a repr, the lines a waiting cell prints): ``CellText``, made
  only by ``cell_text``. JupyterLab and Notebook 7 make links of ``scheme://``, ``www.`` and ``data:`` in plain
  text and interpret ANSI escapes, so ``cell_text`` shows every control, bidirectional and invisible character as
  its escape (``\\u001b``) and writes those prefixes defanged (``https[:]//``, ``www[.]``, ``data[:]``), the form
  people who share indicators of compromise read without clicking.
- A command line's output (``purra-jupyter check``): ``CliText``, made only by ``cli_text``: one line, every
  control escaped, and never starting with ``::`` (GitHub's runner reads a line that does as a workflow command).
- Files: ``untrusted.json_line``, the one JSON Lines writer.
"""

from __future__ import annotations

import re
from typing import Any

from .markup import Html, pre
from .visible import readable, visible

TEXT_PLAIN = "text/plain"
TEXT_HTML = "text/html"
# What JupyterLab's text renderer links (its ``webLinkRegex``: any ``scheme://``, ``data:``, ``www.``).
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]{2,40}):(?=//)")
_WWW = re.compile(r"(?i)\b(www)\.")
_DATA = re.compile(r"(?i)\b(data):")
_COMMAND = "::"  # what starts a GitHub Actions workflow command


class CellText(str):
    """Plain text that reads in a cell as it is: no control or invisible character, no link (see ``cell_text``)."""

    __slots__ = ()


class CliText(str):
    """One line of a command's output that no CI runner reads as a command (see ``cli_text``)."""

    __slots__ = ()


def defanged(text: str) -> str:
    """``text`` with what a frontend would make a link written so that it does not: ``https[:]//``, ``www[.]``,
    ``data[:]``."""
    text = _SCHEME.sub(r"\1[:]", text)
    return _DATA.sub(r"\1[:]", _WWW.sub(r"\1[.]", text))


def cell_text(text: str, *, address: str | None = None) -> CellText:
    """``text`` as a cell shows it as plain text: its lines and tabs kept, every other control, bidirectional and
    invisible character as its escape, links defanged; except ``address``, an address the kit checked and asks the
    person to open (the authorization flow's, https only), which stays one a person can copy."""
    if address:
        return CellText(visible(address).join(cell_text(part) for part in text.split(address)))
    return CellText(defanged(readable(text)))


def cli_text(text: str) -> CliText:
    """``text`` on one line of a command's output: every control (line breaks included) and invisible character as
    its escape, and a leading ``::`` written ``\\u003a:``."""
    line = visible(text)
    stripped = line.lstrip()
    if stripped.startswith(_COMMAND):
        line = line[: len(line) - len(stripped)] + "\\u003a" + stripped[1:]
    return CliText(line)


def cut(text: str, chars: int, whole: str) -> str:
    """``text`` at most ``chars`` characters, a cut saying how much was shown and where ``whole`` it is."""
    if len(text) <= chars:
        return text
    return f"{text[:chars]}… (cut: {chars:,} of {len(text):,} characters shown; {whole} holds them all)"


def bundle(html: Html, text: CellText, **others: Any) -> dict[str, Any]:
    """A MIME bundle of ours: escaped HTML, plain text made for a cell, and any MIME types of our own (JSON data the
    extension draws with ``textContent``)."""
    return {TEXT_PLAIN: str(text), TEXT_HTML: str(html), **others}


def text_bundle(text: str) -> dict[str, Any]:
    """Text as a bundle: the lines as a cell shows them, and as an escaped monospace block for HTML readers."""
    return bundle(pre(text), cell_text(text))


__all__ = [
    "TEXT_HTML",
    "TEXT_PLAIN",
    "CellText",
    "CliText",
    "bundle",
    "cell_text",
    "cli_text",
    "cut",
    "defanged",
    "text_bundle",
]
