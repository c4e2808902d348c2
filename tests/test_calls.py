"""Tool calls: PurrA envelopes equal purra-mcp's, every error code from the input that causes it,
raw exploration results, and HTML that no server text can break."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from conftest import HANG_GUARD, demo_in_memory, raw_config, server_said, unsafe_markup, wait_until
from mcp import types
from purra.contracts import ToolPolicy
from purra_mcp import McpToolBinding, discover_mcp_tools

import purra_jupyter as pj
from purra_jupyter._base.markup import escape
from purra_jupyter._base.wire import ENVELOPE_MIME, RAW_RESULT_MIME
from purra_jupyter._purra.bindings import call_limits
from purra_jupyter._purra.envelope import (
    EFFECT_NOTES,
    ENVELOPE_KIND,
    IMAGE_ALT,
    RAW_LABEL,
    SERVER_WORDS,
    Envelope,
    RawResult,
)

EMPTY = {"text": [], "structured": None}


@pytest.fixture
def demo() -> Iterator[pj.McpSession]:
    with pj.connect(demo_in_memory()) as session:
        yield session


def counts(session: pj.McpSession) -> dict[str, int]:
    """The demo server's own count of the tools/call requests it received."""
    result = session.connection.request(lambda client: client.call_tool("call_counts", {}))
    return result.structuredContent["counts"]


def test_an_ok_envelope_with_text_structured_and_a_table(demo: pj.McpSession) -> None:
    envelope = demo.call("search_documents", {"query": "PurrA envelope", "limit": 3}, approve=True)
    assert isinstance(envelope, Envelope)
    assert envelope.ok and envelope.error_code is None
    assert envelope.server == "demo" and envelope.tool == "search_documents"
    assert envelope.text and envelope.structured["hits"]
    assert envelope.to_dict() == {"text": envelope.text, "structured": envelope.structured}
    frame = envelope.to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["id", "title", "score"] and len(frame) == len(envelope.structured["hits"])
    assert envelope.elapsed_ms > 0
    assert demo.catalog["search_documents"].bound_as == "search_documents"  # bound by the approved call
    one = demo.call("echo", {"text": "x"}, approve=True).to_frame()  # one object: one row
    assert one.to_dict("records") == [{"text": "x"}]
    with pytest.raises(pj.McpSessionError) as caught:
        RawResult("demo", "tiny_image", structured_content=None).to_frame()
    assert caught.value.code == "mcp_result_not_tabular" and "neither an object nor" in caught.value.message


def test_the_envelope_equals_what_purras_registration_returns(demo: pj.McpSession) -> None:
    bindings = {name: McpToolBinding(name, ToolPolicy(mode="read", title=name, risk_level="read"), None)
                for name in ("search_documents", "fail")}  # fmt: skip
    for name in bindings:
        demo.bind(name)
    host = demo.connection.request(
        lambda client: discover_mcp_tools(
            client, "demo", bindings, monitor=demo.monitor, limits=call_limits(demo.limits)
        )
    )
    handlers = {registration.schema.name: registration.handler for registration in host.registrations}
    for name, arguments in [("search_documents", {"query": "jupyter", "limit": 2}), ("fail", {"message": "x"})]:
        expected = demo.connection.request(lambda client, n=name, a=arguments: handlers[n](None, a))
        envelope = demo.call(name, arguments, approve=True)
        assert envelope.json == expected.content
        assert envelope.error_code == expected.error_code
    assert demo.bindings["revisionDigest"] == host.snapshot.revision_digest


@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [
        ("fail", {"message": "boom"}, "mcp_tool_error"),
        ("get_document", {"id": "doc-404"}, "mcp_tool_error"),
        ("tiny_image", {}, "mcp_result_unsupported"),
        ("echo", {"text": "x" * 40_000}, "mcp_result_too_large"),
    ],
)
def test_tool_failures_come_back_as_envelopes_with_purras_code(
    demo: pj.McpSession, tool: str, arguments: dict, code: str
) -> None:
    envelope = demo.call(tool, arguments, approve=True)
    assert envelope.error_code == code and not envelope.ok
    assert envelope.to_dict() == EMPTY  # remote error text never enters the envelope
    assert "boom" not in envelope.json  # ... it is shown beside it, as the server's text
    assert ("boom" in envelope.server_text) == (tool == "fail")
    assert any(f"{tool} (purra)" in row.detail and code in row.detail for row in demo.log.events("call"))
    if code == "mcp_result_unsupported":  # purra-mcp gives no words: the kit says what and where to look
        assert "not text" in envelope.message and "raw=True, or %mcp_call --raw" in envelope.message


def test_a_read_shows_no_effect_line_and_a_write_does(demo: pj.McpSession) -> None:
    """``not_started`` on a read that ran would read as "did not run": the effect is a write's line only."""
    read = demo.call("echo", {"text": "x"}, approve=True)
    assert read.ok and "effect:" not in repr(read) and "purra-effect" not in read._repr_mimebundle_()["text/html"]
    assert read._repr_mimebundle_()[ENVELOPE_MIME]["effectState"] is None
    demo.bind("add_note", effect="write", scope_validator=pj.allow_any_scope)
    write = demo.call("add_note", {"text": "x"}, approve=True)
    assert "effect: committed" in repr(write) and write._repr_mimebundle_()[ENVELOPE_MIME]["effectState"] == "committed"
    refused = demo.call("add_note", {"text": 5}, approve=True)  # nothing sent: for a write, that is news
    assert refused.error_code == "mcp_invalid_arguments" and "effect: not_started" in repr(refused)
    assert "5 is not of type 'string'" in refused.message, refused.message  # the schema's words, as raw says


def test_the_status_line_says_a_close_ended_the_session_not_an_error() -> None:
    session = pj.connect(demo_in_memory("closing"))
    status = session.status_widget()
    assert "last error: none" in status.text
    session.close("closed with %mcp_disconnect")
    assert "ended: closed with %mcp_disconnect" in status.text and "last error" not in status.text


@pytest.mark.parametrize(
    ("mode", "code"), [("bad-structured", "mcp_result_invalid"), ("no-structured", "mcp_result_invalid")]
)
def test_results_that_break_the_declared_output_schema_are_invalid(mode: str, code: str) -> None:
    with pj.connect(raw_config("raw", "--call-result", mode)) as session:
        envelope = session.call("tool_000", {"x": "y"}, approve=True)
        assert envelope.error_code == code and envelope.to_dict() == EMPTY


def test_invalid_arguments_are_refused_before_anything_is_sent(demo: pj.McpSession) -> None:
    for arguments in ({"text": 3}, {}, {"text": "x", "extra": 1}):
        envelope = demo.call("echo", arguments, approve=True)
        assert envelope.error_code == "mcp_invalid_arguments"
        assert "nothing was sent" in envelope.message
        # Decided in code, the call has one check, purra-mcp's handler's, and its record says so.
        assert envelope.message.startswith("PurrA's check refused the arguments"), envelope.message
    raw = demo.call("greet", {"name": 3}, raw=True, approve=True)
    assert raw.error_code == "mcp_invalid_arguments" and "$.name" in raw.message
    assert "echo" not in counts(demo) and "greet" not in counts(demo)


def test_scope_denial_timeout_stale_and_closed(demo: pj.McpSession) -> None:
    demo.bind("echo", scope_validator=lambda state, arguments, signal=None: "not this text")
    assert demo.call("echo", {"text": "x"}, approve=True).error_code == "mcp_scope_denied"

    started = time.monotonic()
    timed_out = demo.call("sleep", {"seconds": 30}, approve=True, timeout=0.5)
    # The timeout ended the wait (the code says so: the server's 30 s would have given a result), and not before
    # its 0.5 s; the upper bound is a guard against a hang, not a speed claim.
    assert timed_out.error_code == "mcp_timeout" and 0.5 <= time.monotonic() - started < HANG_GUARD
    assert "0.5 s" in timed_out.message
    assert demo.call("add", {"a": 1, "b": 2}, approve=True).structured == {"sum": 3}  # still usable

    demo.connection.request(lambda client: client.call_tool("toggle_extra_tool", {}))
    wait_until(lambda: demo.state == "stale", what="stale")
    assert demo.call("add", {"a": 1, "b": 2}, approve=True).error_code == "mcp_catalog_stale"
    assert demo.call("greet", {"name": "x"}, approve=True, raw=True).error_code == "mcp_catalog_stale"
    demo.refresh()
    assert demo.call("add", {"a": 1, "b": 2}, approve=True).ok

    demo.close()
    assert demo.call("add", {"a": 1, "b": 2}, approve=True).error_code == "mcp_connection_closed"
    assert demo.call("greet", {"name": "x"}, approve=True, raw=True).error_code == "mcp_connection_closed"


def test_a_stale_binding_registration_reports_stale_by_itself(demo: pj.McpSession) -> None:
    """Even past the kit's own check, purra-mcp's handler refuses a stale binding."""
    demo.bind("add")
    # What a tools/list_changed does to purra-mcp's monitor, before the session has noticed it.
    notice = types.ServerNotification(types.ToolListChangedNotification())
    demo.connection.request(lambda client: demo.monitor.on_message(notice))
    envelope = demo.call("add", {"a": 1, "b": 2}, approve=True)
    assert envelope.error_code == "mcp_catalog_stale"


def test_a_json_rpc_error_keeps_the_servers_words_on_the_raw_path() -> None:
    with pj.connect(raw_config("rpc", "--call-result", "rpc-error")) as session:
        raw = session.call("tool_000", {"x": "a"}, raw=True, approve=True)
        assert raw.error_code == "mcp_protocol_error" and not raw.ok
        assert raw.server_text.startswith("JSON-RPC error -32603: getaddrinfo ENOTFOUND api.example.invalid")
        assert raw.server_text.endswith("y" * 400)  # whole: it is under SERVER_TEXT_CHARS
        html = raw._repr_mimebundle_()["text/html"]
        assert escape(SERVER_WORDS) in html and "&lt;script&gt;" in html
        assert unsafe_markup(html) == []
        assert raw._repr_mimebundle_()["application/vnd.purra.raw-result+json"]["serverText"] == raw.server_text
        # On the PurrA path the envelope never carries remote text (purra-mcp's rule).
        envelope = session.call("tool_000", {"x": "a"}, approve=True)
        assert envelope.error_code == "mcp_protocol_error" and envelope.to_dict() == EMPTY
        assert session.state == "ready"


def test_approval_policies_and_refusals(demo: pj.McpSession) -> None:
    pending = demo.call("echo", {"text": "x"})  # the default policy asks a person (see test_approval.py)
    assert pending.state == "pending"
    pending.deny()
    denied = demo.call("echo", {"text": "x"}, approve=False)
    assert denied.error_code == "mcp_approval_denied" and denied.to_dict() == EMPTY
    assert "echo" not in counts(demo)
    with pj.connect(demo_in_memory("denying"), approval="deny") as denying:
        assert denying.call("echo", {"text": "x"}).error_code == "mcp_approval_denied"
        # The deny policy refuses every call: an approval written in code does not override it.
        assert denying.call("echo", {"text": "x"}, approve=True).error_code == "mcp_approval_denied"
        frame = denying.evaluate("echo", [{"text": "x"}], approve=True)
        assert frame["error_code"].tolist() == ["mcp_approval_denied"]
        assert "echo" not in counts(denying)
        assert any("which approve=True does not override" in row.detail for row in denying.log.events("approval"))
    with pj.connect(demo_in_memory("auto"), approval="auto") as auto:
        assert auto.call("echo", {"text": "x"}).ok
        assert any("auto policy" in row.detail for row in auto.log.events("approval"))
    with pytest.raises(pj.McpSessionError) as caught:
        demo.call("no_such_tool", {}, approve=True)
    assert caught.value.code == "mcp_binding_missing"
    with pytest.raises(pj.McpSessionError) as caught:
        demo.call("echo", {"text": "x"}, approve=True, timeout=301)
    assert caught.value.code == "mcp_config_invalid"
    with pytest.raises(pj.McpSessionError) as caught:
        demo.call("greet", {"name": "x"}, approve=True)  # outside the profile: raw only
    assert caught.value.code == "mcp_schema_unsupported"


def test_local_names_and_the_call_log(demo: pj.McpSession) -> None:
    demo.bind("add", local_name="plus")
    envelope = demo.call("plus", {"a": 2, "b": 3}, approve=True)
    assert envelope.tool == "plus" and envelope.structured == {"sum": 5}
    assert demo.call("add", {"a": 1, "b": 1}, approve=True).tool == "plus"  # the remote name works too
    assert [row.detail.split(" ")[:2] for row in demo.log.events("call")[-2:]] == [["plus", "(purra)"]] * 2
    assert re.search(r"plus \(purra\) \d+ ms: ok", demo.log.events("call")[-1].detail)
    assert any("approved in code" in row.detail for row in demo.log.events("approval"))


def test_interrupt_during_a_call_returns_mcp_interrupted_and_the_session_survives(demo: pj.McpSession) -> None:
    demo.bind("sleep")

    def interrupt_when_the_server_sleeps() -> None:
        wait_until(lambda: "sleep: 20" in server_said(demo), what="the server to start sleeping")
        os.kill(os.getpid(), signal.SIGINT)

    watcher = threading.Thread(target=interrupt_when_the_server_sleeps)
    watcher.start()
    interrupted = demo.call("sleep", {"seconds": 20}, approve=True)  # the interrupt rule: a result, no error
    watcher.join()
    assert (interrupted.error_code, interrupted.effect_state) == ("mcp_interrupted", "not_started")
    assert "cancelled on the server" in interrupted.message
    assert demo.call("echo", {"text": "after"}, approve=True).structured == {"text": "after"}


def test_raw_results_keep_errors_and_limits(demo: pj.McpSession) -> None:
    failed = demo.call("fail", {"message": "visible in raw"}, raw=True, approve=True)
    assert failed.is_error and failed.error_code == "mcp_tool_error"
    assert failed.content == [{"type": "text", "text": "visible in raw"}]
    big = demo.call("echo", {"text": "x" * 40_000}, raw=True, approve=True)
    assert big.error_code == "mcp_result_too_large" and big.content == []
    slow = demo.call("sleep", {"seconds": 5}, raw=True, approve=True, timeout=0.5)
    assert slow.error_code == "mcp_timeout"


def html_of(obj: Any) -> str:
    return obj._repr_mimebundle_()["text/html"]


def test_server_text_is_escaped_in_every_html_bundle() -> None:
    with pj.connect(raw_config("xss", "--tools", "2", "--call-result", "xss")) as session:
        bundles = [html_of(session.catalog), html_of(session.log)]
        envelope = session.call("tool_000", {"x": "<script>"}, approve=True)
        assert envelope.ok, envelope
        bundles.append(html_of(envelope))
        raw = session.call("tool_001", {"x": "y"}, raw=True, approve=True)
        bundles.append(html_of(raw))
        for html in bundles:
            assert unsafe_markup(html) == []
        assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html_of(envelope)
        assert "<img" not in html_of(raw)  # the SVG and the PNG with markup in its data are shown as text
        assert "image/svg+xml" in html_of(raw)
        json.dumps(envelope._repr_mimebundle_()["application/vnd.purra.envelope+json"])  # plain JSON data


def test_html_fallbacks_fold_long_json_and_scale_tiny_images(demo: pj.McpSession) -> None:
    """What nbviewer, GitHub and VS Code show: long structured JSON folded, a 4x4 image big enough to see."""
    hits = demo.call("search_documents", {"query": "PurrA envelope", "limit": 3}, approve=True)
    html = hits._repr_mimebundle_()["text/html"]
    assert "<details><summary>structured (" in html and " lines of JSON)</summary>" in html
    small = demo.call("add", {"a": 1, "b": 2}, approve=True)._repr_mimebundle_()["text/html"]
    assert "<details>" not in small and "&quot;sum&quot;: 3" in small
    image = demo.call("tiny_image", {}, raw=True, approve=True)._repr_mimebundle_()["text/html"]
    assert "style='min-width:64px;max-width:100%;image-rendering:pixelated'" in image


def test_each_result_payload_carries_the_kits_fixed_words_apart_from_the_result() -> None:
    """The labextension shows the words the payload brings (typed once, in envelope.py), beside the result: what
    a model is given, ``to_dict()``, stays exactly the result."""
    envelope = Envelope("demo", "add_note", '{"text":["saved"],"structured":null}', effect_state="unknown")
    payload = envelope._repr_mimebundle_()[ENVELOPE_MIME]
    assert payload["labels"] == {"kind": ENVELOPE_KIND, "serverWords": SERVER_WORDS, "effectNotes": EFFECT_NOTES}
    assert set(EFFECT_NOTES) == {"committed", "unknown"}  # a note for each state a person must not misread
    assert payload["envelope"] == envelope.to_dict() == {"text": ["saved"], "structured": None}
    raw = RawResult("demo", "echo", [{"type": "text", "text": "hi"}])
    raw_payload = raw._repr_mimebundle_()[RAW_RESULT_MIME]
    assert raw_payload["labels"] == {"raw": RAW_LABEL, "serverWords": SERVER_WORDS, "imageAlt": IMAGE_ALT}
    assert raw_payload["result"] == raw.to_dict() and set(raw.to_dict()) == {"content", "structuredContent", "isError"}
    # each payload gets its own labels: a change to one bundle's words reaches no other
    payload["labels"]["effectNotes"]["unknown"] = "changed"
    assert "changed" not in EFFECT_NOTES.values()
