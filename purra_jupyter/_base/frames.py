"""The DataFrames the kit returns, shown with their text as it is.

pandas writes a tab, a line break and a carriage return in a cell as ``\\t``, ``\\n`` and ``\\r``, in its text and in
its HTML alike, so a result's text reads as something it is not. A frame the kit made is marked (``kit_frame``: its
``attrs``, which pandas keeps through filtering, sorting and selecting), and its HTML is the kit's own
(``frame_html``): each value in a ``white-space:pre-wrap`` cell, so tabs and line breaks lay it out, written through
``markup`` like every other piece of the kit's HTML (escaped, every other control, bidirectional and invisible character
as its escape). The extension makes it IPython's HTML for DataFrames (``magics.frame_formatter``); a frame that is not
the kit's keeps pandas' own. The plain text stays pandas': one line per row is what keeps its columns aligned. Each
value shows at most ``FRAME_CELL_CHARS`` characters (escaped, ``egress.Room``): a batch's result texts of 64 KiB each
stay in the DataFrame, not in the notebook's file, and the table says so.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

from .egress import Room, note_html
from .markup import Html, join, tag, td, th

KIT_FRAME = "purra_jupyter"  # the ``attrs`` key that marks a frame the kit made
FRAME_CELL_MIN_WIDTH = "6em"  # a frame has many columns: each is narrower than a catalog's, still never squeezed
FRAME_CELL_CHARS = 1_000  # of one value shown in a frame's HTML (a few lines of a result's text), escaped
CUT_NOTE = f"values longer than {FRAME_CELL_CHARS:,} characters are cut (…); the DataFrame holds them whole"
Frame = TypeVar("Frame")


def kit_frame(frame: Frame) -> Frame:
    """``frame``, marked as the kit's (``frame_html`` shows it)."""
    frame.attrs[KIT_FRAME] = True  # type: ignore[attr-defined]
    return frame


def is_kit_frame(value: object) -> bool:
    """Whether ``value`` is a frame ``kit_frame`` marked (or one pandas made of it, keeping its ``attrs``)."""
    attrs = getattr(value, "attrs", None)
    return isinstance(attrs, dict) and attrs.get(KIT_FRAME) is True


def frame_html(frame: Any, max_rows: int | None = None, min_rows: int | None = None) -> Html:
    """``frame`` as a table of its index and columns, every value as its text; past ``max_rows`` rows, the first and
    last ``min_rows // 2`` around a row of ``…`` (by default pandas' ``display`` options, as its own HTML)."""
    import pandas as pd

    max_rows = pd.get_option("display.max_rows") if max_rows is None else max_rows
    min_rows = pd.get_option("display.min_rows") if min_rows is None else min_rows
    count = len(frame)
    columns = [str(frame.index.name or ""), *(str(column) for column in frame.columns)]
    cut: list[bool] = []  # (one per value cut)
    if count <= max_rows:
        rows = list(_rows(frame, cut))
    else:
        half = max(min_rows // 2, 1)
        gap = tag("tr", join(td("…") for _ in columns))
        rows = [*_rows(frame.head(half), cut), gap, *_rows(frame.tail(half), cut)]
    head = tag("thead", tag("tr", join(th(column) for column in columns)))
    shape = tag("p", f"{count} rows × {len(frame.columns)} columns")
    table = tag("table", head, tag("tbody", join(rows)), class_="dataframe purra-frame")
    return tag("div", table, shape, note_html(CUT_NOTE) if cut else None)


def _rows(frame: Any, cut: list[bool]) -> Iterator[Html]:
    for index, *values in frame.itertuples(name=None):
        yield tag("tr", th(str(index)), join(_cell(str(value), cut) for value in values))


def _cell(text: str, cut: list[bool]) -> Html:
    """A value's cell, at most ``FRAME_CELL_CHARS`` characters of it (``…`` where it is cut, noted in ``cut``)."""
    part = Room.html(FRAME_CELL_CHARS).take(text)
    if len(part) < len(text):
        cut.append(True)
        part += "…"
    return td(part, wrapped=True, min_width=FRAME_CELL_MIN_WIDTH)


__all__ = ["FRAME_CELL_CHARS", "KIT_FRAME", "frame_html", "is_kit_frame", "kit_frame"]
