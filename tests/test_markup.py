"""The HTML builder (``purra_jupyter._base.markup``): text and attribute values escaped by construction, ``Html`` kept,
a plain ``str`` never trusted; and no module but the builder writes a tag or escapes by hand."""

from __future__ import annotations

import ast
import re
from typing import Any

import pytest
from conftest import ROOT, descendants, tokens
from hypothesis import given
from hypothesis import strategies as st
from markupsafe import Markup

import purra_jupyter as pj
from purra_jupyter._base.frames import frame_html
from purra_jupyter._base.markup import (
    CELL,
    DOCTYPE,
    WRAPPED_CELL,
    Html,
    escape,
    join,
    key_value_table,
    pre,
    table,
    tag,
    td,
    th,
    trusted,
)
from purra_jupyter._base.visible import readable
from purra_jupyter.demo.server import build_server

HOSTILE = "<img src=x onerror=alert(1)>"
QUOTES = "' onmouseover='alert(1)' x=\" y=\""


def test_text_is_escaped() -> None:
    assert tag("b", HOSTILE) == "<b>&lt;img src=x onerror=alert(1)&gt;</b>"
    assert tag("p", "a & b") == "<p>a &amp; b</p>"
    assert tag("p", 'it\'s "quoted"') == "<p>it&#x27;s &quot;quoted&quot;</p>"  # html.escape's entities, as before
    assert tokens(tag("div", HOSTILE)).tags == [("div", {})]


def test_attribute_values_are_escaped_and_quoted() -> None:
    html = tag("code", "x", title=QUOTES, class_="purra-digest")
    quoted = "&#x27; onmouseover=&#x27;alert(1)&#x27; x=&quot; y=&quot;"
    assert html == f"<code title='{quoted}' class='purra-digest'>x</code>"
    assert tokens(html).tags == [("code", {"title": QUOTES, "class": "purra-digest"})]  # one attribute, intact
    link = tag("a", "Open", href="https://as.example/?x='><script>alert(1)</script>")
    assert tokens(link).tags == [("a", {"href": "https://as.example/?x='><script>alert(1)</script>"})]


def test_attribute_names_and_omission() -> None:
    assert tag("span", "x", class_="c", data_state="on", title=None) == "<span class='c' data-state='on'>x</span>"
    assert tag("td", "x", style=CELL) == f"<td style='{CELL}'>x</td>"
    with pytest.raises(ValueError, match="attribute name"):
        tag("span", **{"onclick x": "1"})
    for bad in ("script x", "B", "a>", "", "img/"):
        with pytest.raises(ValueError, match="element name"):
            tag(bad)


def test_nested_html_is_kept_and_none_is_left_out() -> None:
    assert tag("div", tag("b", "x"), None, " & ", tag("i", "<y>")) == "<div><b>x</b> &amp; <i>&lt;y&gt;</i></div>"
    assert tag("div", escape("<b>")) == "<div>&lt;b&gt;</div>"
    assert escape(escape("<b>")) == "&lt;b&gt;"  # escaping Html again leaves it as it is
    assert tag("p", Markup("<em>ok</em>")) == "<p><em>ok</em></p>"  # markupsafe's own safe type is HTML too


def test_a_plain_str_is_never_trusted() -> None:
    class Subclass(str):
        pass

    for untrusted in ("<b>x</b>", Subclass("<b>x</b>")):
        assert tag("div", untrusted) == "<div>&lt;b&gt;x&lt;/b&gt;</div>"
        assert join([untrusted]) == "&lt;b&gt;x&lt;/b&gt;"
    # Html's own operations escape what they are given, the way tag does
    assert Html("<i>") + "<b>" == "<i>&lt;b&gt;"
    assert "<b>" + Html("<i>") == "&lt;b&gt;<i>"
    assert isinstance(Html("<i>") + "<b>", Html)
    assert Html(", ").join(["<b>", tag("i", "'")]) == "&lt;b&gt;, <i>&#x27;</i>"
    assert Html("<p>%s</p>") % "<b>" == "<p>&lt;b&gt;</p>"
    assert Html("<p>{}</p>").format("'") == "<p>&#x27;</p>"
    # the result is HTML, a plain str is text
    assert isinstance(tag("b", "x"), Html) and not hasattr("x", "__html__")


def test_join() -> None:
    assert join([tag("b", "a"), "<c>", None, tag("i", "d")], " · ") == "<b>a</b> · &lt;c&gt; · <i>d</i>"
    assert join([], "<sep>") == "" and join(["a", "b"], "<") == "a&lt;b"
    assert not join([])  # empty: falsy, as "" was


def test_void_elements() -> None:
    assert tag("img", alt="x", src="data:image/png;base64,AA==") == "<img alt='x' src='data:image/png;base64,AA=='>"
    assert tag("meta", charset="utf-8") == "<meta charset='utf-8'>"
    with pytest.raises(ValueError, match="no content"):
        tag("img", "text")
    assert DOCTYPE + tag("title", "t") == "<!doctype html><title>t</title>"


def test_trusted_takes_a_renderers_html_as_it_is() -> None:
    pandas_like = "<table class='dataframe'><tr><td>&lt;b&gt;</td></tr></table>"
    assert tag("div", trusted(pandas_like)) == f"<div>{pandas_like}</div>"


def test_the_helpers() -> None:
    wrapped = "white-space:pre-wrap;word-break:normal;overflow-wrap:anywhere;text-align:left"  # between words
    assert pre(HOSTILE) == f"<pre style='{wrapped}'>&lt;img src=x onerror=alert(1)&gt;</pre>"
    assert th("<h>") == f"<th style='{CELL}'>&lt;h&gt;</th>"
    wrapped_cell = f"{WRAPPED_CELL};min-width:10em"  # never squeezed until its words break
    assert td("v", wrapped=True) == f"<td style='{wrapped_cell}'>v</td>"
    assert td("v", wrapped=True, min_width="16em") == f"<td style='{WRAPPED_CELL};min-width:16em'>v</td>"
    assert key_value_table([("k<", "v'")], "purra-x") == (
        f"<table class='purra-x'><tr><th style='{CELL}'>k&lt;</th><td style='{wrapped_cell}'>v&#x27;</td></tr></table>"
    )
    rows = [tag("tr", td("1"), td(HOSTILE, wrapped=True))]
    html = table(["a", "<b>"], rows, "purra-log")
    assert html.startswith(f"<table class='purra-log'><thead><tr><th style='{CELL}'>a</th><th style='{CELL}'>&lt;b&gt;")
    assert [name for name, _ in tokens(html).tags] == ["table", "thead", "tr", "th", "th", "tbody", "tr", "td", "td"]
    assert table(["a"], []) == f"<table><thead><tr><th style='{CELL}'>a</th></tr></thead><tbody></tbody></table>"


@given(text=st.text(), value=st.text())
def test_any_text_reads_back_as_itself(text: str, value: str) -> None:
    """Whatever a server sends, a tokenizer reads one element whose text and attribute are exactly what was sent, each
    control, bidirectional and invisible character as its escape (``names.readable``)."""
    html = tag("span", text, title=value, class_="purra-x")
    result = tokens(html)
    assert result.tags == [("span", {"title": readable(value), "class": "purra-x"})]
    assert "".join(result.text) == readable(text)


def test_what_the_kit_hands_out_is_a_plain_str() -> None:
    """Bundles and widget values are ``str``, not ``Html``: a reader's ``"".join(parts) + html`` stays a string
    (``Markup`` would escape the reader's half)."""
    shown: dict[str, Any] = {}
    with pj.connect(pj.ServerConfig("demo", server=build_server())) as session:
        shown["catalog"] = session.catalog._repr_mimebundle_()["text/html"]
        shown["binding"] = session.bind("echo", local_name="echo_again")._repr_mimebundle_()["text/html"]
        shown["session"] = session._repr_mimebundle_()["text/html"]
        pending = session.call("echo", {"text": HOSTILE})
        shown["pending"] = pending._repr_mimebundle_()["text/html"]
        widgets = [w for w in descendants(pending.widget) if isinstance(getattr(w, "value", None), str)]
        shown |= {f"widget {i}": w.value for i, w in enumerate(widgets)}
        pending.approve()
        shown["record"] = pending._repr_mimebundle_()["text/html"]
        shown["envelope"] = session.call("echo", {"text": HOSTILE}, approve=True)._repr_mimebundle_()["text/html"]
        shown["raw"] = session.call("echo", {"text": HOSTILE}, raw=True, approve=True)._repr_mimebundle_()["text/html"]
        frame = session.evaluate("echo", [{"text": HOSTILE}], approve=True)
        shown["summary"] = frame.attrs["summary"]._repr_mimebundle_()["text/html"]
        shown["log"] = session.log._repr_mimebundle_()["text/html"]
        shown["status"] = session.status_widget().value
        form = session.form("echo")
        shown |= {f"form {path}": field.label.value for path, field in form.fields.items()}
    assert len(widgets) >= 2  # the details and the state
    assert {name: type(value).__name__ for name, value in shown.items() if type(value) is not str} == {}
    assert HOSTILE not in "".join(shown.values())


# --- no module but the builder writes HTML ---

_ELEMENTS = (
    "a|b|body|br|code|details|div|em|h[1-6]|head|html|i|iframe|img|input|li|link|meta|ol|p|pre|script|small|span|"
    "strong|style|summary|svg|table|tbody|td|th|thead|title|tr|ul"
)
_TAG = re.compile(rf"<\s*/?\s*(?:{_ELEMENTS})(?:[\s>/]|$)|<!doctype", re.IGNORECASE)


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring constants: words about markup (a ``<details>`` the reader opens), not code."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _module_findings(path: str, source: str) -> list[str]:
    """Tags in string literals (f-strings' literal parts included), and hand-made escaping or trust."""
    tree = ast.parse(source)
    skipped = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            if _TAG.search(node.value):
                found.append((node.lineno, f"a tag in a string: {node.value[:60]!r}"))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if any(name.split(".")[0] in ("html", "markupsafe") for name in names):
                found.append((node.lineno, f"imports {names[0]} (escape through purra_jupyter._base.markup)"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
            name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if name in ("Html", "Markup"):
                found.append((node.lineno, f"{name}(...) trusts a string (use tag, or markup.trusted)"))
    return [f"{path}:{line}: {what}" for line, what in sorted(found)]


def test_no_module_but_the_builder_writes_a_tag_or_escapes_by_hand() -> None:
    package = ROOT / "purra_jupyter"
    findings = []
    for path in sorted(package.rglob("*.py")):
        if path != package / "_base" / "markup.py":
            findings += _module_findings(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))
    assert findings == []


def test_the_scan_finds_what_it_is_for() -> None:
    source = (
        '"""A module that writes a <details> in its docstring."""\n'
        "from html import escape\n"
        "import markupsafe\n"
        "a = f\"<div class='x'>{escape(y)}</div>\"\n"
        "b = '</TD>'\n"
        "c = Html(y)\n"
        "d = f'<McpSession {y}>'\n"  # a repr, not HTML
        "e = 'Bearer <token>'\n"
    )
    found = _module_findings("m.py", source)
    assert [line.split(": ", 1)[1].split(":")[0] for line in found] == [
        "imports html (escape through purra_jupyter._base.markup)",
        "imports markupsafe (escape through purra_jupyter._base.markup)",
        "a tag in a string",
        "a tag in a string",
        "a tag in a string",
        "Html(...) trusts a string (use tag, or markup.trusted)",
    ]


def test_a_long_frame_shows_its_first_and_last_rows_as_pandas_would() -> None:
    """``frame_html`` keeps pandas' ``display.max_rows`` and ``min_rows``: past the first, the second's head, tail."""
    import pandas as pd

    frame = pd.DataFrame({"text": [f"row {number}\tend" for number in range(100)]})
    html = frame_html(frame, 60, 10)
    assert "row 4\tend" in html and "row 95\tend" in html and "row 5\t" not in html and "row 94\t" not in html
    assert html.count("<tr>") == 1 + 10 + 1 and ">…</td>" in html and "100 rows × 1 columns" in html
    assert "row 50\tend" in frame_html(frame.head(60), 60, 10)
