"""Server-chosen names and words as a person sees them: nothing invisible, nothing that reorders the kit's own words,
and a mark on a tool name that looks like another tool's of the same server.

A tool's name, title and description are the server's. A right-to-left override (U+202E) in a name reverses the
kit's words after it; a zero-width space or a Cyrillic "е" makes ``sеarch`` look like ``search``; thirty line
breaks in a title push what follows a screen down. So wherever the kit shows such text to a person who decides
(the approval view, the catalog and its frame, the session log):

- ``visible(text)`` writes control, format (bidirectional and zero-width), separator, private-use, unassigned and
  other invisible characters as ``\\uXXXX``, and so does the third and later of a run of combining marks;
- ``readable(text)`` does that to a block of text, keeping its line breaks and tabs;
- ``one_line(text, limit)`` does that to words with their line breaks collapsed, within ``limit`` characters;
- ``quoted(name)`` writes a name as a list of names shows it: ``visible`` and in quotes, its own quotes escaped, so
  that ``a', 'b`` inside one name cannot pass for two;
- ``look_alikes(names)`` finds the names that are confusable in the sense of Unicode's UTS #39: their skeletons
  agree. A skeleton here is the name in NFD with invisible characters left out and each character replaced by its
  prototype in Unicode's ``confusables.txt``, as the ``confusable-homoglyphs`` package ships it.
"""

from __future__ import annotations

import functools
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Mapping

_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})
# Characters of visible categories that draw nothing (fillers, blanks, variation selectors).
_BLANK = frozenset(
    {0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180E, 0x180F, 0x2800, 0x3164, 0xFFA0}
    | set(range(0xFE00, 0xFE10))
    | set(range(0xE0100, 0xE01F0))
)
_MARKS = frozenset({"Mn", "Me"})
COMBINING_RUN = 2  # combining marks shown on one character; more are escaped (they would draw over other lines)
LOOKS_LIKE = "looks like"  # the words a name's mark begins with


def invisible(char: str) -> bool:
    """Whether ``char`` draws nothing a person can tell apart (a space is the one visible blank)."""
    return char != " " and (unicodedata.category(char) in _INVISIBLE_CATEGORIES or ord(char) in _BLANK)


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: str) -> str:
    """``text`` with every invisible character, and every combining mark past ``COMBINING_RUN`` on one character,
    written as its escape (``\\u202e``)."""
    if text.isascii() and text.isprintable():  # (most text: nothing to look at character by character)
        return text
    out: list[str] = []
    marks = 0
    for char in text:
        is_mark = unicodedata.category(char) in _MARKS
        marks = marks + 1 if is_mark else 0
        out.append(_escaped(char) if invisible(char) or marks > COMBINING_RUN else char)
    return "".join(out)


LAYOUT = ("\n", "\t")  # the controls a block of text keeps: they lay it out, and hide nothing


def readable(text: str) -> str:
    """``text`` as a block a person reads (a result, a log, a page): ``visible``, its line breaks and tabs kept."""
    if text.isascii() and text.replace("\n", "").replace("\t", "").isprintable():
        return text
    return "\n".join("\t".join(visible(part) for part in line.split("\t")) for line in text.split("\n"))


def one_line(text: str, limit: int) -> str:
    """A server's words on one line (line breaks and runs of space collapsed), cut to ``limit`` characters, then
    made visible."""
    line = " ".join(text.split())
    return visible(line if len(line) <= limit else line[: limit - 1] + "…")


def quoted(name: str) -> str:
    """``name`` as one item of a list of names: ``visible``, in single quotes, a quote of its own as ``\\u0027``."""
    return "'" + visible(name).replace("'", "\\u0027") + "'"


def quoted_list(names: Iterable[str]) -> str:
    """``'a', 'b'``: each name ``quoted``."""
    return ", ".join(quoted(name) for name in names)


def has_invisible(text: str) -> bool:
    return visible(text) != text


@functools.cache
def _confusables() -> Mapping[str, list[dict[str, str]]]:
    from confusable_homoglyphs import confusables

    data: Mapping[str, list[dict[str, str]]] = confusables.confusables_data  # the package ships no types
    return data


def _homoglyph(entry: Mapping[str, str]) -> str:
    return entry["c"].replace("\u200e", "")  # the data marks right-to-left characters with LRMs for display


@functools.lru_cache(maxsize=4096)
def _prototype(char: str) -> str:
    """What ``char`` looks like in ``confusables.txt`` (itself when it is a prototype or looks like nothing)."""
    data = _confusables()
    entries = data.get(char)
    if not entries or len(entries) != 1:  # a prototype lists everything that looks like it
        return char
    target = _homoglyph(entries[0])
    back = data.get(target, [])
    if len(back) == 1 and _homoglyph(back[0]) == char:  # two characters that only look like each other
        return min(char, target)
    return target


def skeleton(name: str) -> str:
    """UTS #39's skeleton of ``name``, invisible characters left out."""
    decomposed = unicodedata.normalize("NFD", name)
    return unicodedata.normalize("NFD", "".join(_prototype(c) for c in decomposed if not invisible(c)))


def look_alikes(names: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """For each name that is confusable with others of ``visible``, those others (in order)."""
    groups: dict[str, list[str]] = defaultdict(list)
    for name in names:
        groups[skeleton(name)].append(name)
    return {
        name: tuple(other for other in group if other != name)
        for group in groups.values()
        if len(group) > 1
        for name in group
    }


def name_warning(name: str, alikes: Iterable[str] = ()) -> str:
    """What a person must know of a tool's name before trusting it: empty when nothing."""
    warnings = []
    if has_invisible(name):
        warnings.append("holds invisible or control characters (shown as \\u escapes)")
    others = list(alikes)
    if others:
        warnings.append(f"{LOOKS_LIKE} {quoted_list(others)}, another tool of this server")
    return "; ".join(warnings)


__all__ = [
    "has_invisible",
    "look_alikes",
    "name_warning",
    "one_line",
    "quoted",
    "quoted_list",
    "readable",
    "skeleton",
    "visible",
]
