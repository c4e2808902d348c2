"""Pictures: an evaluation's summary shows its latency distribution and outcome counts, a catalog its refusal reasons,
as PNG images (matplotlib) on a light card, which need no kernel and no CDN: in the HTML export of an executed
notebook, as in JupyterLab. Server words drawn in a chart stay text."""

from __future__ import annotations

import base64
import io
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy
import pytest
from conftest import demo_in_memory, execute_notebook, unsafe_markup
from matplotlib.figure import Figure
from PIL import Image
from test_published_servers import EVERYTHING

import purra_jupyter as pj
from purra_jupyter._base.charts import CARD, DPI, WIDTH_INCHES, latency_and_outcomes, latency_drawing, refusal_reasons
from purra_jupyter._purra.catalog import reason_keyword

IMG = re.compile(r"<img src=['\"]data:image/png;base64,([A-Za-z0-9+/=]+)['\"] alt=['\"]([^'\"]*)['\"]")


def picture(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    assert image.format == "PNG" and image.size[0] == WIDTH_INCHES * DPI
    return image.convert("RGB")


def dark_pixels(image: Image.Image) -> int:
    """How many pixels are dark ink on the card (text, axes, marks)."""
    return int((numpy.asarray(image, dtype=int).sum(axis=2) < 200).sum())


def test_an_evaluations_summary_shows_its_latencies_and_outcomes_as_a_picture() -> None:
    with pj.connect(demo_in_memory(), approval="auto") as demo:
        demo.bind("sleep", concurrency_safe=True)
        frame = demo.evaluate("sleep", [{"seconds": 0.005 * (i % 4)} for i in range(20)] + [{"seconds": -1}])
    summary = frame.attrs["summary"]
    assert len(summary.latencies_ms) == 20 and summary.chart.alt.endswith("ok 20, mcp_invalid_arguments 1")
    html = summary._repr_mimebundle_()["text/html"]
    [(data, alt)] = IMG.findall(html)
    assert alt == summary.chart.alt
    image = picture(base64.b64decode(data))
    assert image.getpixel((1, 1)) == tuple(int(CARD[i : i + 2], 16) for i in (1, 3, 5))  # a light card
    assert dark_pixels(image) > 500  # with dark ink on it: readable on a light and on a dark page


def test_the_chart_marks_the_summarys_own_percentiles() -> None:
    """Eleven rows, one slow: the chart's p50 and p95 are the summary's (they once took another rule, and p95 was the
    slowest row below 20 rows)."""
    with pj.connect(demo_in_memory(), approval="auto") as demo:
        demo.bind("sleep", concurrency_safe=True)
        frame = demo.evaluate("sleep", [{"seconds": 0.0}] * 10 + [{"seconds": 0.3}], concurrency=1)
    summary = frame.attrs["summary"]
    assert summary.p95_ms is not None and summary.p95_ms < max(summary.latencies_ms)
    figure = Figure()
    latency_drawing(summary.latencies_ms, summary.counts, "t", summary.marks)(figure)
    drawn = [text.get_text() for text in figure.axes[0].texts]
    assert drawn == [f"p50 {summary.p50_ms:.1f}", f"p95 {summary.p95_ms:.1f}"], (drawn, summary)
    assert f"p50 {summary.p50_ms:.1f} ms, p95 {summary.p95_ms:.1f} ms" in repr(summary)


@pytest.mark.published  # a published MCP server from npm
def test_a_catalogs_refusal_reasons_as_a_picture() -> None:
    config = pj.ServerConfig("everything", command="node", args=[str(EVERYTHING), "stdio"])
    with pj.connect(config) as everything:
        chart = everything.catalog.refusal_chart()
    assert chart.alt.startswith("everything: 13 of 13 tools not callable under PurrA (mcp_schema_unsupported 12")
    assert "reasons: $schema 13, default " in chart.alt
    bundle = chart._repr_mimebundle_()
    assert bundle["text/plain"] == chart.alt and dark_pixels(picture(base64.b64decode(bundle["image/png"]))) > 300
    with pj.connect(demo_in_memory()) as demo:
        assert "reasons: default 1" in demo.catalog.refusal_chart().alt


def test_reason_keywords_are_the_last_step_of_the_reasons_path() -> None:
    assert reason_keyword('inputSchema.properties.x.default: "default" is outside the profile — drop it') == "default"
    assert reason_keyword("inputSchema.$schema: draft-07 — use 2020-12") == "$schema"
    assert reason_keyword("inputSchema.anyOf[1].type: null — drop it") == "type"
    assert reason_keyword("name: not a name PurrA binds") == "name"


def test_a_servers_words_in_a_chart_are_text() -> None:
    hostile = "<script>alert(1)</script> $\\frac{1}{0}$ " + "x" * 200
    for data in (latency_and_outcomes([], {hostile: 1}, hostile, {}), refusal_reasons({hostile: 2}, hostile)):
        assert dark_pixels(picture(data)) > 100  # drawn (no mathtext error), nothing run
    with pj.connect(demo_in_memory(), approval="auto") as demo:
        demo.bind("fail")
        frame = demo.evaluate("fail", [{"message": hostile}])
    html = frame.attrs["summary"]._repr_mimebundle_()["text/html"]
    assert unsafe_markup(html) == [] and "<script>" not in html


def test_the_html_export_of_an_executed_notebook_holds_the_pictures(tmp_path: Path) -> None:
    cells = [
        "import sys\nimport purra_jupyter as pj",
        'demo = pj.connect(pj.ServerConfig("demo", command=sys.executable, args=["-m", "purra_jupyter.demo"]))',
        'demo.bind("echo")\nframe = demo.evaluate("echo", [{"text": str(i)} for i in range(10)], approve=True)\n'
        'frame.attrs["summary"]',
        "demo.catalog.refusal_chart()",
    ]
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(notebook, tmp_path / "charts.ipynb")
    execute_notebook(tmp_path / "charts.ipynb", tmp_path / "executed.ipynb")
    jupyter = Path(sys.executable).parent / "jupyter"
    run = subprocess.run([str(jupyter), "nbconvert", "--to", "html", str(tmp_path / "executed.ipynb")],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    exported = (tmp_path / "executed.html").read_text()
    images = re.findall(r"<img[^>]+src=['\"]data:image/png;base64,", exported)
    assert len(images) == 2, len(images)  # the summary's (inside its HTML) and the catalog's (an image output)
    assert "http" not in "".join(re.findall(r"<img[^>]+>", exported))  # nothing to fetch
