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

What a display writes of a server's data is bounded in each medium by a ``Room``: characters counted as they end up
in the bundle (escaped: ``<`` is ``&lt;``, an invisible character ``\\u200b``), so a text that escaping multiplies is
cut sooner, and a cut says how much it shows and which attribute holds it all (``shown_note``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from .markup import Html, escape, join, pre, tag, td, th
from .visible import readable, visible

TEXT_PLAIN = "text/plain"
TEXT_HTML = "text/html"
# What JupyterLab's text renderer links (its ``webLinkRegex``: any ``scheme://``, ``data:``, ``www.``).
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]{2,40}):(?=//)")
_WWW = re.compile(r"(?i)\b(www)\.")
_DATA = re.compile(r"(?i)\b(data):")
_COMMAND = "::"  # what starts a GitHub Actions workflow command
# The bound of one display of server data (a resource read, a prompt, a log, a listing, a result), in characters as
# they end up in its bundle. HTML: about 500 lines of 80 characters as a person reads them, a page's worth of
# scrolling; a notebook of a hundred such outputs stays a few megabytes. Plain text is the fallback of readers without
# HTML (a terminal, a diff of the file): a hundred-odd lines.
HTML_CHARS = 40_000
TEXT_CHARS = 8_000
_STEP = 1_024  # characters measured at once while fitting a text into a room
S = TypeVar("S")
T = TypeVar("T")


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


def shown_note(shown: int, total: int, things: str, whole: str, *, last: bool = False) -> str:
    """What a bounded display says of a cut: ``showing the first 40,000 of 3,500,000 characters; .text holds them
    all`` (``last``: the last ones, a log's)."""
    return f"showing the {'last' if last else 'first'} {shown:,} of {total:,} {things}; {whole} holds them all"


def cut(text: str, chars: int, whole: str) -> str:
    """``text`` at most ``chars`` characters, a cut saying how much was shown and where ``whole`` it is."""
    if len(text) <= chars:
        return text
    return f"{text[:chars]}… ({shown_note(chars, len(text), 'characters', whole)})"


def html_size(text: str) -> int:
    """How many characters ``text`` takes in a bundle's HTML (escaped, invisible characters written as escapes)."""
    return len(escape(text))


def text_size(text: str) -> int:
    """How many characters ``text`` takes in a cell's plain text (``cell_text``)."""
    return len(cell_text(text))


def fitting(text: str, most: int, size: Callable[[str], int]) -> int:
    """How many of ``text``'s first characters take at most ``most`` characters as ``size`` measures them. Only the
    beginning is looked at (a few KiB past ``most`` at worst), however long the text."""
    used = taken = 0
    while taken < len(text):
        step = text[taken : taken + _STEP]
        needed = size(step)
        if used + needed > most:
            low, high = 0, len(step)  # (the part of this step that fits: at least low characters, fewer than high)
            while high - low > 1:
                middle = (low + high) // 2
                low, high = (middle, high) if used + size(step[:middle]) <= most else (low, middle)
            return taken + low
        used += needed
        taken += len(step)
    return taken


class Room:
    """What one display may still write in one medium, in characters as they end up in its bundle. The server's
    text takes its room as it is escaped (``take``); a part the display made (a row) takes its room as the medium
    writes it (``fits``), so a display of many small parts (a log of 10,000 rows) is bounded as one of a large text
    is."""

    def __init__(self, size: Callable[[str], int], made: Callable[[str], int], most: int) -> None:
        self._size = size  # of a server's text in this medium
        self._made = made  # of a part made for this medium (HTML as it is; a line of text as ``cell_text`` makes it)
        self.left = most

    @classmethod
    def html(cls, most: int = HTML_CHARS) -> Room:
        return cls(html_size, len, most)

    @classmethod
    def text(cls, most: int = TEXT_CHARS) -> Room:
        return cls(text_size, text_size, most)

    @property
    def full(self) -> bool:
        return self.left <= 0

    def take(self, text: str) -> str:
        """``text``'s longest beginning that fits what is left (all of it when it fits), its room taken."""
        part = text[: fitting(text, max(self.left, 0), self._size)]
        self.left -= self._size(part)
        return part

    def spend(self, chars: int) -> None:
        """Take the room of ``chars`` characters of the kit's own markup around a server's text (a cell's tags)."""
        self.left -= chars

    def fits(self, part: str) -> bool:
        """Whether ``part``, made for the medium (a row's HTML, a line of text), fits what is left; if so it takes
        its room."""
        needed = self._made(part)
        if needed > self.left:
            return False
        self.left -= needed
        return True

    def fill(self, items: Iterable[S], make: Callable[[S, Room], T], measure: Callable[[T], str] = str) -> list[T]:
        """Each item as ``make`` shows it within this room (cutting its text to what is left), until the room is full:
        each part takes its room whole, the kit's markup around the server's text too."""
        made = []
        for item in items:
            if self.full:
                break
            before = self.left
            made.append(make(item, self))
            self.left = before - self._made(measure(made[-1]))
        return made

    def parts(self, made: Iterable[T], measure: Callable[[T], str] = str) -> Iterator[T]:
        """The parts of ``made`` in order while each fits (``measure``: a part as the medium writes it), each taking
        its room; the first that does not fit ends them."""
        for part in made:
            if not self.fits(measure(part)):
                return
            yield part


def cut_block(text: str, room: Room, whole: str) -> tuple[str, str | None]:
    """``text`` as much of it as fits ``room``, and the note that says how much that is (``None``: all of it)."""
    part = room.take(text)
    if len(part) == len(text):
        return part, None
    return part, shown_note(len(part), len(text), "characters", whole)


def text_shown(text: str, room: Room, whole: str) -> str:
    """As much of ``text`` as fits ``room`` (plain text), then what it shows of it when it is cut."""
    part, note = cut_block(text, room, whole)
    return part if note is None else f"{part}… ({note})"


def pre_shown(text: str, room: Room, whole: str) -> Html:
    """A monospace block of as much of ``text`` as fits ``room`` (HTML), then what it shows of it when it is cut."""
    part, note = cut_block(text, room, whole)
    return join([pre(part), note_html(note) if note else None])


def table_shown(columns: Sequence[str], rows: Iterable[Sequence[str]], total: int, room: Room, whole: str) -> Html:
    """A table of a server's text within ``room``: the columns whose names fit, each cell as much of its text as fits
    (a cut one ends in ``…``), ``rows`` while there is room; then how many it shows of ``total`` rows (and of the
    columns) and where they all are."""
    head = _cells(columns, room, th)
    body = []
    for row in rows:
        if room.full:
            break
        body.append(tag("tr", join(_cells([*row, *[""] * (len(head) - len(row))][: len(head)], room, _wrapped))))
    cut = [f"{len(body):,} of {total:,} rows"] if len(body) < total else []
    cut += [f"{len(head):,} of {len(columns):,} columns"] if len(head) < len(columns) else []
    note = note_html(f"showing the first {' and '.join(cut)}; {whole} holds them all") if cut else None
    table = tag("table", tag("thead", tag("tr", join(head))), tag("tbody", join(body)))
    return join([table, note])


def _wrapped(text: str) -> Html:
    return td(text, wrapped=True)


def _cells(texts: Sequence[str], room: Room, cell: Callable[[str], Html]) -> list[Html]:
    """A cell for each text while there is room, each text cut to what is left (ending in ``…`` when cut)."""
    made = []
    for text in texts:
        if room.full:
            break
        part = room.take(text)
        made.append(cell(part if len(part) == len(text) else part + "…"))
        room.spend(len(made[-1]) - html_size(part))
    return made


def block_lines(label: str, text: str, indent: str = "  ") -> list[str]:
    """A server's block of text under the kit's ``label``, as lines of plain text: on the label's line when it is one
    line, else each of its lines below the label behind ``| ``, so that none passes for a line of the kit's."""
    lines = text.split("\n")
    if len(lines) == 1:
        return [f"{indent}{label}: {text}"]
    return [f"{indent}{label}:", *(f"{indent}  | {line}" for line in lines)]


def note_html(note: str) -> Html:
    """A bounded display's note on what it shows, in small type under what it cut."""
    return tag("small", f"… ({note})", class_="purra-shown")


def bundle(html: Html, text: CellText, **others: Any) -> dict[str, Any]:
    """A MIME bundle of ours: escaped HTML, plain text made for a cell, and any MIME types of our own (JSON data the
    extension draws with ``textContent``)."""
    return {TEXT_PLAIN: str(text), TEXT_HTML: str(html), **others}


def text_bundle(text: str) -> dict[str, Any]:
    """Text as a bundle: the lines as a cell shows them, and as an escaped monospace block for HTML readers."""
    return bundle(pre(text), cell_text(text))


__all__ = [
    "HTML_CHARS",
    "TEXT_CHARS",
    "TEXT_HTML",
    "TEXT_PLAIN",
    "CellText",
    "CliText",
    "Room",
    "block_lines",
    "bundle",
    "cell_text",
    "cli_text",
    "cut",
    "cut_block",
    "defanged",
    "fitting",
    "html_size",
    "note_html",
    "pre_shown",
    "shown_note",
    "table_shown",
    "text_bundle",
    "text_shown",
    "text_size",
]
