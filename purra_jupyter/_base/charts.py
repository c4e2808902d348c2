"""Charts as PNG images, drawn by matplotlib (its Agg backend: no display, no kernel, no CDN, nothing to load later).

Each is a light card (a white background with dark ink), which reads the same on a light and a dark page, in
JupyterLab, Notebook 7, an HTML export and on GitHub. Labels that came from a server (refusal codes are purra-mcp's,
but tool names and outcome codes may not be) are drawn as text in the image, never as markup.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from .egress import TEXT_PLAIN, CellText, cell_text
from .markup import Html, tag
from .visible import one_line

if TYPE_CHECKING:
    from matplotlib.figure import Figure

WIDTH_INCHES = 7.0
DPI = 100
INK, CARD, OK_COLOR, ERROR_COLOR, BAR_COLOR = "#1f1f1f", "#ffffff", "#2e7d32", "#c62828", "#1565c0"
LABEL_CHARS = 40  # of one label on an axis


def png(draw: Callable[[Figure], None], *, height_inches: float) -> bytes:
    """The PNG of a figure ``draw`` fills in."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(WIDTH_INCHES, height_inches), dpi=DPI, facecolor=CARD)
    draw(figure)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", facecolor=CARD)
    return buffer.getvalue()


def latency_and_outcomes(latencies_ms: Sequence[float], counts: Mapping[str, int], title: str,
                         marks: Mapping[str, float]) -> bytes:  # fmt: skip
    """The picture of ``latency_drawing``."""
    return png(latency_drawing(latencies_ms, counts, title, marks), height_inches=2.8)


def latency_drawing(latencies_ms: Sequence[float], counts: Mapping[str, int], title: str,
                    marks: Mapping[str, float]) -> Callable[[Figure], None]:  # fmt: skip
    """Left: the distribution of the calls' latencies (a histogram, with ``marks`` drawn: the summary's own p50 and
    p95, so that the picture and the summary never disagree); right: how many rows ended in each outcome (``ok``
    green, each error code red)."""

    def draw(figure: Figure) -> None:
        left, right = figure.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
        _style(left, "latency (ms)", "calls")
        if latencies_ms:
            ordered = sorted(latencies_ms)
            left.hist(ordered, bins=min(30, max(5, len(ordered) // 5)), color=BAR_COLOR)
            for (label, value), side in zip(marks.items(), ("left", "right"), strict=False):
                left.axvline(value, color=INK, linestyle="--", linewidth=1)
                left.annotate(f"{label} {value:.1f}", (value, 1), xycoords=("data", "axes fraction"), color=INK,
                              fontsize=8, ha=side, va="top", xytext=(3 if side == "left" else -3, -3),
                              textcoords="offset points")  # fmt: skip
        else:
            left.text(0.5, 0.5, "no call ran", ha="center", va="center", color=INK, transform=left.transAxes)
        _style(right, "rows", "")
        names = [_label(name) for name in counts]
        right.barh(names, list(counts.values()), color=[OK_COLOR if name == "ok" else ERROR_COLOR for name in counts])
        right.invert_yaxis()
        figure.suptitle(_label(title, 110), color=INK, fontsize=9)

    return draw


def refusal_reasons(counts: Mapping[str, int], title: str) -> bytes:
    """One bar per reason tools are not callable, by how many tools it stops."""

    def draw(figure: Figure) -> None:
        axes = figure.subplots()
        _style(axes, "tools", "")
        if counts:
            axes.barh([_label(name) for name in counts], list(counts.values()), color=ERROR_COLOR)
            axes.invert_yaxis()
        else:
            axes.text(0.5, 0.5, "every tool is callable", ha="center", va="center", color=INK, transform=axes.transAxes)
        figure.suptitle(_label(title, 110), color=INK, fontsize=9)

    return png(draw, height_inches=1.2 + 0.3 * max(1, len(counts)))


ALT_CHARS = 2_000


class Chart:
    """A chart to show: its PNG, and the words that say what it shows (the plain-text view, the image's alt): on one
    line, within ``ALT_CHARS`` (they name the server's words: a tool, the keywords its reasons quote)."""

    def __init__(self, data: bytes, alt: str) -> None:
        self.data = data
        self.alt = one_line(alt, ALT_CHARS)

    def __repr__(self) -> CellText:
        return cell_text(f"<Chart: {self.alt}>")

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        return {"image/png": base64.b64encode(self.data).decode("ascii"), TEXT_PLAIN: cell_text(self.alt)}


def image_html(data: bytes, alt: str) -> Html:
    """The image inline, as a PNG data URI (the only form the kit shows an image in)."""
    src = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    return tag("img", src=src, alt=alt, style="max-width:100%;display:block;margin:4px 0")


def _style(axes: object, xlabel: str, ylabel: str) -> None:
    from matplotlib.axes import Axes

    assert isinstance(axes, Axes)
    axes.set_facecolor(CARD)
    axes.set_xlabel(xlabel, color=INK, fontsize=9)
    axes.set_ylabel(ylabel, color=INK, fontsize=9)
    axes.tick_params(colors=INK, labelsize=8)
    for spine in axes.spines.values():
        spine.set_color(INK)


def _label(text: str, limit: int = LABEL_CHARS) -> str:
    # (matplotlib reads $...$ as mathtext: a label is text, so a dollar sign is escaped)
    return one_line(text, limit).replace("$", r"\$")


__all__ = ["Chart", "image_html", "latency_and_outcomes", "latency_drawing", "png", "refusal_reasons"]
