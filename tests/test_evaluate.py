"""Batch evaluation against the demo server: ok and error rows, checks, one approval for the batch,
concurrency refused or honoured (the server counts what it had in flight), and an interrupt that
keeps the finished rows."""

from __future__ import annotations

import gc
import math
import re
import time
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from conftest import HANG_GUARD, bind_notes, demo_in_memory, interrupt_when, server_said, wait_until

import purra_jupyter as pj
from purra_jupyter._evaluation.batches import EvaluationSummary
from purra_jupyter._purra.envelope import Envelope, RawResult
from purra_jupyter._ui.approval import PendingCall

RESULT_COLUMNS = ["ok", "error_code", "effect_state", "text", "structured", "elapsed_ms", "message"]
NA = pd.NA


@pytest.fixture
def demo() -> Iterator[pj.McpSession]:
    with pj.connect(demo_in_memory()) as session:
        yield session


def server_counts(session: pj.McpSession) -> dict[str, Any]:
    """The demo server's own record: finished tools/call requests per tool (these reports left out),
    and the most it had in flight."""
    seen = session.connection.request(lambda client: client.call_tool("call_counts", {})).structuredContent
    seen["counts"].pop("call_counts", None)
    return seen


def test_a_reads_rows_carry_no_effect_and_a_writes_say_theirs(demo: pj.McpSession) -> None:
    """``effect_state`` is filled where a person reads an effect (a write, as its envelope shows it), never as
    ``not_started`` on every row of a read; the text column holds the text as the server sent it."""
    demo.bind("echo")
    bind_notes(demo)
    reads = demo.evaluate("echo", [{"text": "a\tb"}, {"text": "c"}], approve=True)
    assert reads["ok"].all() and reads["effect_state"].isna().all()
    assert reads["text"].tolist() == ["a\tb", "c"]
    writes = demo.evaluate("add_note", [{"text": "one"}], approve=True)
    assert writes["effect_state"].tolist() == ["committed"]


def test_a_batchs_text_shows_its_tabs_and_line_breaks_as_whitespace_still_escaped(demo: pj.McpSession, ip: Any) -> None:
    """pandas writes a tab and a line break in a cell as ``\\t`` and ``\\n``: a frame the kit returns is shown in the
    kit's HTML instead (after ``%load_ext purra_jupyter``), each value in a pre-wrap cell, escaped, an override made
    visible; a frame filtered from it too; any other frame keeps pandas' HTML."""
    said = "a\tb\n<b>c</b> \u202eRLO"
    frame = demo.evaluate("echo", [{"text": said}, {"text": "plain"}], approve=True)
    for shown in (frame, frame[frame["ok"]], frame[["text"]]):
        html = ip.display_formatter.format(shown)[0]["text/html"]
        assert "a\tb\n&lt;b&gt;c&lt;/b&gt; \\u202eRLO" in html, html  # the tab and line break as they are
        assert "<b>" not in html and "\u202e" not in html
        cell = re.search(r"<td style='([^']*)'>a\tb", html)
        assert cell is not None and "white-space:pre-wrap" in cell.group(1), html
    assert "\\t" not in ip.display_formatter.format(frame[["text"]])[0]["text/html"]  # (``structured``: its repr)
    assert frame.loc[0, "text"] == said  # the data is the server's, unchanged
    pending = demo.evaluate("echo", [{"text": said}])  # approved by a click: the record the cell keeps holds it so
    pending.approve()
    wait_until(lambda: pending.state == "done", what="the batch")
    assert "a\tb\n&lt;b&gt;c&lt;/b&gt; \\u202eRLO" in pending._repr_mimebundle_()["text/html"]
    theirs = pd.DataFrame({"t": ["a\tb"]})
    assert ip.display_formatter.format(theirs)[0]["text/html"] == theirs._repr_html_()  # pandas' own, as before


def test_the_table_reads_as_a_table(demo: pj.McpSession) -> None:
    """Nullable dtypes, so nothing reads as a Python value: an argument some rows leave out stays an integer,
    an ok row's error_code is <NA> (not the word None), text is one string, a row never sent has no time."""
    rows = [{"query": "PurrA", "limit": 2}, {"query": "x"}, {"query": "too many", "limit": 100}]
    frame = demo.evaluate("search_documents", rows, approve=True)
    assert str(frame["limit"].dtype) == "Int64" and frame["limit"].fillna(-1).tolist() == [2, -1, 100]
    assert str(frame["error_code"].dtype) == "string"
    assert frame["error_code"].fillna("<NA>").tolist() == ["<NA>", "mcp_invalid_arguments", "mcp_invalid_arguments"]
    assert isinstance(frame["text"][0], str) and "\t" in frame["text"][0] and "\n" in frame["text"][0]
    assert str(frame["elapsed_ms"].dtype) == "Float64" and frame["elapsed_ms"][0] > 0
    assert frame["elapsed_ms"][1] is NA and frame["elapsed_ms"][2] is NA
    shown = frame.drop(columns="structured").to_string()
    assert "<NA>" in shown and "None" not in shown and "[" not in shown


def test_a_batch_keeps_each_rows_values_as_it_ends_not_its_result(demo: pj.McpSession) -> None:
    # A batch of 100,000 rows must not hold 100,000 results until its table is built: each row's values are taken
    # as it ends (and ``check`` runs then), so the results alive at any time stay few, however many rows ended.
    alive: list[int] = []

    def check(result: Any) -> bool:
        gc.collect()
        alive.append(sum(isinstance(thing, Envelope) for thing in gc.get_objects()))
        return result.ok

    rows = [{"query": f"PurrA {i}", "limit": 1} for i in range(30)]
    frame = demo.evaluate("search_documents", rows, approve=True, check=check)
    assert len(alive) == 30 and max(alive) <= 3, alive
    assert frame["passed"].all() and frame["text"].str.len().gt(0).all()


def test_ok_rows_and_error_rows_come_back_as_one_table(demo: pj.McpSession, capsys: pytest.CaptureFixture[str]) -> None:
    rows = pd.DataFrame(
        {"query": ["PurrA envelope", "Jupyter kernel", "too many", None], "limit": [2, 1, 100, 3]},
        index=["a", "b", "c", "d"],
    )
    frame = demo.evaluate("search_documents", rows, approve=True)

    assert list(frame.columns) == ["query", "limit", *RESULT_COLUMNS]
    assert list(frame.index) == ["a", "b", "c", "d"]
    assert frame["ok"].tolist() == [True, True, False, False]
    assert frame["error_code"].tolist() == [NA, NA, "mcp_invalid_arguments", "mcp_invalid_arguments"]
    assert "$.limit" in frame.loc["c", "message"] and "nothing was sent" in frame.loc["c", "message"]
    # Decided in code, each row's arguments have one check, purra-mcp's handler's, and its refusal says so.
    assert frame.loc["c", "message"].startswith("PurrA's check refused the arguments")
    assert "$.query" in frame.loc["d", "message"]  # a missing cell is left out, so 'query' is missing
    assert len(frame.loc["a", "structured"]["hits"]) == 2 and frame.loc["a", "text"]
    assert frame.loc["a", "elapsed_ms"] > 0 and frame.loc["c", "elapsed_ms"] is NA  # never sent: no time
    assert server_counts(demo)["counts"] == {"search_documents": 2}  # the refused rows were never sent
    assert frame.loc["a", "elapsed_ms"] == round(frame.loc["a", "elapsed_ms"], 1)
    assert str(frame["limit"].dtype) == "int64"  # the caller's own dtypes are kept
    # The progress bar is text on stdout (in a notebook too), ending with the outcomes.
    bar = capsys.readouterr().out.replace("\r", "\n")
    assert "search_documents: 100%|██████████| 4/4" in bar and "ok 2, mcp_invalid_arguments 2" in bar, bar

    summary = frame.attrs["summary"]
    assert isinstance(summary, EvaluationSummary)
    assert summary.rows == 4 and summary.counts == {"ok": 2, "mcp_invalid_arguments": 2}
    assert 0 < summary.p50_ms <= summary.p95_ms
    assert summary.passed is None
    html = summary._repr_mimebundle_()["text/html"]
    assert "ok 2" in html and "mcp_invalid_arguments 2" in html and "p95" in html

    failing = demo.evaluate("fail", [{"message": "first <b>"}, {"message": "second"}], approve=True)
    assert failing["error_code"].tolist() == ["mcp_tool_error", "mcp_tool_error"]
    assert failing["ok"].tolist() == [False, False]
    assert failing.attrs["summary"].counts == {"mcp_tool_error": 2}
    calls = [row.detail for row in demo.log.events("call")]
    assert sum("fail (purra)" in detail and "mcp_tool_error" in detail for detail in calls) == 2


def test_a_check_marks_each_row_passed_or_failed_with_its_message(demo: pj.McpSession) -> None:
    def check(envelope: Envelope) -> bool | str:
        if envelope.structured is None:
            raise ValueError("no structured content")
        total = envelope.structured["sum"]
        if total > 10:
            return f"sum {total} is over 10"
        return total >= 0

    rows = [{"a": 1, "b": 2}, {"a": 20, "b": 1}, {"a": -5, "b": 1}, {"a": "x", "b": 1}]
    frame = demo.evaluate("add", rows, approve=True, check=check)
    assert list(frame.columns) == ["a", "b", *RESULT_COLUMNS, "passed", "check_message"]
    assert frame["passed"].tolist() == [True, False, False, False]
    assert frame["check_message"].tolist() == [
        "",
        "sum 21 is over 10",
        "check returned False",
        "mcp_host_error: the check raised ValueError: no structured content",
    ]
    assert frame["error_code"].tolist() == [NA, NA, NA, "mcp_invalid_arguments"]
    summary = frame.attrs["summary"]
    assert (summary.passed, summary.failed) == (1, 3)
    assert "1 passed, 3 failed" in summary._repr_mimebundle_()["text/html"]

    odd = demo.evaluate("add", [{"a": 1, "b": 1}], approve=True, check=lambda envelope: None)
    assert odd["passed"].tolist() == [False]
    assert odd["check_message"].tolist() == ["check returned NoneType, not bool or a message"]


def test_concurrency_is_refused_unless_the_binding_is_declared_safe(demo: pj.McpSession) -> None:
    rows = [{"seconds": 0}] * 4
    with pytest.raises(pj.McpSessionError) as unbound:
        demo.evaluate("sleep", rows, approve=True, concurrency=2)
    assert unbound.value.code == "mcp_evaluate_not_concurrency_safe"
    assert "concurrency_safe=True" in unbound.value.message

    demo.bind("sleep")  # bound, but not declared concurrency-safe
    with pytest.raises(pj.McpSessionError) as unsafe:
        demo.evaluate("sleep", rows, approve=True, concurrency=2)
    assert unsafe.value.code == "mcp_evaluate_not_concurrency_safe"
    assert server_counts(demo)["counts"] == {}  # nothing was sent
    assert demo.log.events("call") == [] and not any("evaluate" in e.detail for e in demo.log.events("approval"))

    for bad in (0, 65, True, 2.0, "2"):
        with pytest.raises(pj.McpSessionError) as caught:
            demo.evaluate("sleep", rows, approve=True, concurrency=bad)
        assert caught.value.code == "mcp_config_invalid"
    for bad_rows in ({"seconds": 1}, "rows", [1, 2], None):
        with pytest.raises(pj.McpSessionError) as caught:
            demo.evaluate("sleep", bad_rows, approve=True)
        assert caught.value.code == "mcp_config_invalid"
    with pytest.raises(pj.McpSessionError) as caught:
        demo.evaluate("no_such_tool", rows, approve=True)
    assert caught.value.code == "mcp_binding_missing"
    assert server_counts(demo)["counts"] == {}


@pytest.mark.parametrize("concurrency", [1, 4])
def test_concurrency_is_honoured_the_server_sees_at_most_n_calls_in_flight(concurrency: int) -> None:
    with pj.connect(demo_in_memory()) as session:
        session.bind("sleep", concurrency_safe=True)
        frame = session.evaluate("sleep", [{"seconds": 0.1}] * 12, approve=True, concurrency=concurrency)
        assert frame["ok"].all() and len(frame) == 12
        assert frame.attrs["summary"].concurrency == concurrency
        seen = server_counts(session)
        assert seen["counts"] == {"sleep": 12}
        # Never more than N at once, and with N > 1 the calls really overlapped (how many at the peak depends
        # on how busy the machine is).
        assert 1 <= seen["max_in_flight"] <= concurrency
        assert seen["max_in_flight"] > 1 or concurrency == 1


def test_an_interrupt_stops_the_batch_and_keeps_the_finished_rows(demo: pj.McpSession) -> None:
    rows = [{"seconds": 0}, {"seconds": 0}, {"seconds": 30}, {"seconds": 0}, {"seconds": 0}]
    with interrupt_when(lambda: "sleep: 30" in server_said(demo), "the server to start the long row") as sent_at:
        frame = demo.evaluate("sleep", rows, approve=True, timeout=60)
        returned_at = time.monotonic()

    # The interrupt ended the wait, not the 30 s row (the codes say so); the bound is a guard against a hang.
    assert returned_at - sent_at[0] < HANG_GUARD
    assert frame["error_code"].tolist() == [NA, NA, "mcp_interrupted", "mcp_interrupted", "mcp_interrupted"]
    assert [s["slept"] for s in frame["structured"][:2]] == [0, 0]
    assert "discarded" in frame["message"][2] and "not sent" in frame["message"][3]
    assert frame.attrs["summary"].counts == {"ok": 2, "mcp_interrupted": 3}
    assert any("interrupted: 3 rows" in e.detail for e in demo.log.events("approval"))
    # The session is usable, and the rows after the interrupt never reached the server.
    assert demo.call("echo", {"text": "still here"}, approve=True).structured == {"text": "still here"}
    assert server_counts(demo)["counts"].get("sleep", 0) <= 3
    wait_until(lambda: "sleep: cancelled" in server_said(demo), what="the long row to be cancelled on the server")


def test_one_approval_widget_covers_the_batch(demo: pj.McpSession) -> None:
    rows = [{"text": f"row {i}"} for i in range(7)] + [{"text": 5}]
    pending = demo.evaluate("echo", rows)
    assert isinstance(pending, PendingCall) and pending.state == "pending"
    assert server_counts(demo)["counts"] == {}
    widget_html = pending.widget.children[0].value
    assert "batch of MCP calls" in widget_html and "7 calls, at most 1 at once" in widget_html
    assert "1 rows refused before approval" in widget_html
    assert "first 5 of 7" in widget_html and "row 4" in widget_html and "row 5" not in widget_html
    assert "declares" in widget_html and "bind echo as read tool echo" in widget_html

    pending.widget.approve_button.click()
    pending.widget.approve_button.click()  # a second click does nothing
    wait_until(lambda: pending.state == "done", what="the batch to finish")
    frame = pending.result
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["arg:text", *RESULT_COLUMNS]  # the input 'text' column does not hide the result's
    assert frame["text"][0] == "row 0" and frame["arg:text"][0] == "row 0"
    assert frame["error_code"].tolist() == [NA] * 7 + ["mcp_invalid_arguments"]
    assert server_counts(demo)["counts"] == {"echo": 7}
    assert pending.widget.approve_button.disabled and pending.widget.deny_button.disabled
    record = pending._repr_mimebundle_()  # the cell's output once settled: decision, summary, then the table
    assert "application/vnd.jupyter.widget-view+json" not in record
    html = record["text/html"]
    assert html.index("purra-decision") < html.index("purra-evaluation") < html.index("<table class='dataframe")
    assert record["text/plain"].startswith("approved (approved by a click) at ")
    [bar, counts] = pending.widget.children[2].children
    assert bar.value == bar.max == 7  # the 7 rows sent: the refused row is no progress
    assert counts.value.endswith(">sent 7 · done 7 · failed 0 of 7</span>")
    assert "refused row 7" in pending.widget.children[0].value  # listed with its reason
    approvals = [e.detail for e in demo.log.events("approval") if "evaluate echo" in e.detail]
    assert len(approvals) == 1 and "approved by a click: 7 rows" in approvals[0]


def test_a_denied_or_void_batch_sends_nothing(demo: pj.McpSession) -> None:
    pending = demo.evaluate("echo", [{"text": "a"}, {"text": "b"}])
    pending.widget.deny_button.click()
    assert pending.state == "denied"
    assert pending.result["error_code"].tolist() == ["mcp_approval_denied"] * 2
    assert demo.evaluate("echo", [{"text": "a"}], approve=False)["error_code"].tolist() == ["mcp_approval_denied"]

    stale = demo.evaluate("echo", [{"text": "a"}, {"text": "b"}])
    demo.call("toggle_extra_tool", approve=True)
    wait_until(lambda: stale.state == "void", what="the pending batch to turn void")
    assert stale.result["error_code"].tolist() == ["mcp_catalog_stale"] * 2
    stale.approve()
    assert server_counts(demo)["counts"] == {"toggle_extra_tool": 1}

    # A stale session refuses every row before any approval.
    frame = demo.evaluate("echo", [{"text": "a"}], approve=True)
    assert frame["error_code"].tolist() == ["mcp_catalog_stale"]


def test_rows_after_a_list_changed_in_the_batch_are_not_sent() -> None:
    with pj.connect(demo_in_memory(), approval="auto") as session:
        frame = session.evaluate("toggle_extra_tool", [{}, {}, {}])
        # purra-mcp's handler marks the first call itself stale: the change arrived before its answer.
        assert frame["error_code"].tolist() == ["mcp_catalog_stale"] * 3
        assert "not sent" not in frame["message"][0]
        assert "not sent" in frame["message"][1] and "not sent" in frame["message"][2]
        assert server_counts(session)["counts"] == {"toggle_extra_tool": 1}


def test_deny_policy_timeouts_empty_batches_and_the_raw_path(demo: pj.McpSession) -> None:
    timed = demo.evaluate("sleep", [{"seconds": 5}, {"seconds": 0}], approve=True, timeout=0.5)
    assert timed["error_code"].tolist() == ["mcp_timeout", NA]
    # The row's time covers its 0.5 s wait; the upper bound is a guard against a hang, not a speed claim.
    assert 400 < timed["elapsed_ms"][0] < HANG_GUARD * 1000

    empty = demo.evaluate("echo", [], approve=True)
    assert list(empty.columns) == RESULT_COLUMNS and len(empty) == 0
    assert empty.attrs["summary"].rows == 0 and empty.attrs["summary"].p50_ms is None

    # Raw path: a tool outside the profile; a missing cell (NaN) is left out, so the server's default applies.
    rows = pd.DataFrame({"name": ["Ada", "Grace"], "punctuation": ["?", math.nan]})
    raw = demo.evaluate("greet", rows, approve=True, raw=True, check=lambda result: isinstance(result, RawResult))
    assert raw["text"].tolist() == ["Hello, Ada?", "Hello, Grace!"]
    assert raw["passed"].all() and raw["structured"].isna().all()

    with pj.connect(demo_in_memory("denied"), approval="deny") as denied:
        frame = denied.evaluate("echo", [{"text": "a"}])
        assert frame["error_code"].tolist() == ["mcp_approval_denied"]
        assert server_counts(denied)["counts"] == {}


def test_stop_on_a_running_batch_keeps_finished_rows_and_sends_nothing_more(demo: pj.McpSession) -> None:
    demo.bind("sleep", concurrency_safe=True)
    rows = [{"seconds": 0}] * 2 + [{"seconds": 30}] * 2 + [{"seconds": 0}] * 4
    pending = demo.evaluate("sleep", rows, concurrency=2)
    assert pending.widget.cancel_button.description == "Stop" and pending.widget.cancel_button.disabled
    pending.widget.approve_button.click()
    wait_until(lambda: pending.job.sent == 4 and pending.job.finished == 2, what="two rows done, two in flight")
    wait_until(lambda: server_said(demo).count("sleep: 30 s") == 2, what="the server to start both slow rows")
    assert not pending.widget.cancel_button.disabled
    pending.widget.cancel_button.click()
    wait_until(lambda: pending.state == "done", what="the stopped batch to settle")
    frame = pending.result
    assert frame["error_code"].fillna("ok").tolist() == ["ok"] * 2 + ["mcp_interrupted"] * 6
    assert pending.job.sent == 4  # nothing was sent after Stop
    wait_until(lambda: server_said(demo).count("sleep: cancelled") == 2, what="the server to cancel both rows")
    assert server_counts(demo)["counts"]["sleep"] == 4
    assert any("stopped by a click" in row.detail for row in demo.log.events("approval"))


@pytest.mark.timeout(300)  # a hang guard: 200,000 rows planned and named (tens of seconds on a busy machine)
@pytest.mark.xdist_group("views-trick")  # not beside the tricky views: a core and 1 GB for ten seconds
def test_a_batch_of_200000_rows_of_1_kb_is_named_by_one_digest(demo: pj.McpSession) -> None:
    """A batch's digest is made of its rows' digests, so no count of rows reaches PurrA's 1 MiB identity limit
    (200,000 rows of 1 KB are 200 MB of arguments); one row that changes changes it."""
    demo.bind("echo")
    rows = [{"text": f"{index:07d}" + "x" * 1017} for index in range(200_000)]
    frame = demo.evaluate("echo", rows, approve=False)
    assert len(frame) == 200_000 and frame["error_code"].eq("mcp_approval_denied").all()
    assert "echo" not in server_counts(demo)["counts"]
    denials = [row.detail for row in demo.log.events("approval") if "denied" in row.detail]
    denied = r"evaluate echo: denied \(denied in code\): 200000 rows, args [0-9a-f]{12}"
    assert len(denials) == 1 and re.fullmatch(denied, denials[0]), denials
    same, other = demo.evaluate("echo", rows[:5_000]), demo.evaluate("echo", [*rows[:4_999], {"text": "y"}])
    again = demo.evaluate("echo", rows[:5_000])
    assert same.arguments_digest == again.arguments_digest != other.arguments_digest
    assert re.fullmatch(r"[0-9a-f]{64}", same.arguments_digest)
    for batch in (same, other, again):
        batch.deny()


def test_arguments_past_purras_identity_limit_are_refused_before_anything_is_sent(demo: pj.McpSession) -> None:
    """No approval can name arguments over PurrA's 1 MiB identity limit: a coded error, and nothing is sent."""
    with pytest.raises(pj.McpSessionError) as raised:
        demo.call("greet", {"name": "x" * (1 << 20)}, raw=True, approve=True)
    assert raised.value.code == "mcp_invalid_arguments" and "1 MiB identity limit" in raised.value.message
    assert "greet" not in server_counts(demo)["counts"]
