"""The DataFrames the kit returns, shown with their text as it is.

pandas writes a tab, a line break and a carriage return in a cell as ``\\t``, ``\\n`` and ``\\r``, in its text and in
its HTML alike, so a result's text reads as something it is not. A frame the kit made is marked (``kit_frame``: its
``attrs``, which pandas keeps through filtering, sorting and selecting), and its HTML is the kit's own
(``frame_html``): each value in a ``white-space:pre-wrap`` cell, so tabs and line breaks lay it out, written through
``markup`` like every other piece of the kit's HTML (escaped, every other control, bidirectional and invisible character
as its escape). The extension makes it IPython's HTML for DataFrames (``magics.frame_formatter``); a frame that is not
the kit's keeps pandas' own. The plain text stays pandas': one line per row is what keeps its columns aligned.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

from .markup import Html, join, tag, td, th

KIT_FRAME = "purra_jupyter"  # the ``attrs`` key that marks a frame the kit made
FRAME_CELL_MIN_WIDTH = "6em"  # a frame has many columns: each is narrower than a catalog's, still never squeezed
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
    if count <= max_rows:
        rows = list(_rows(frame))
    else:
        half = max(min_rows // 2, 1)
        gap = tag("tr", join(td("…") for _ in columns))
        rows = [*_rows(frame.head(half)), gap, *_rows(frame.tail(half))]
    head = tag("thead", tag("tr", join(th(column) for column in columns)))
    shape = tag("p", f"{count} rows × {len(frame.columns)} columns")
    return tag("div", tag("table", head, tag("tbody", join(rows)), class_="dataframe purra-frame"), shape)


def _rows(frame: Any) -> Iterator[Html]:
    for index, *values in frame.itertuples(name=None):
        cells = join(td(str(value), wrapped=True, min_width=FRAME_CELL_MIN_WIDTH) for value in values)
        yield tag("tr", th(str(index)), cells)


__all__ = ["KIT_FRAME", "frame_html", "is_kit_frame", "kit_frame"]
