"""The approval widget and the live status, driven in-process against the demo server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import assert_safe, demo_in_memory, raw_config, server_said, wait_until

import purra_jupyter as pj
from purra_jupyter._base.wire import WIDGET_MIME, WIDGET_VIEW_MIME
from purra_jupyter._ui.approval import HINTS_LABEL, PendingCall


@pytest.fixture
def demo() -> Iterator[pj.McpSession]:
    with pj.connect(demo_in_memory()) as session:
        yield session


def counts(session: pj.McpSession) -> dict[str, int]:
    """The demo server's own count of the tools/call requests it received."""
    return session.connection.request(lambda client: client.call_tool("call_counts", {})).structuredContent["counts"]


def test_approve_by_click_runs_the_call_once_and_shows_the_result(demo: pj.McpSession) -> None:
    pending = demo.call("echo", {"text": "<b>hi</b>"})
    assert isinstance(pending, PendingCall) and pending.state == "pending"
    assert "echo" not in counts(demo)  # nothing sent before the decision
    html = pending.widget.children[0].value
    assert "bind echo as read tool echo" in html and HINTS_LABEL in html
    assert ">read-only</span>" in html and ">not destructive</span>" in html  # hints as words, not JSON
    assert f"title='{pending.arguments_digest}'>{pending.arguments_digest[:12]}…</code>" in html
    assert "purra-raw-banner" not in html
    assert "&lt;b&gt;hi&lt;/b&gt;" in html and "<b>hi</b>" not in html
    states: list[str] = []
    pending.observe(lambda change: states.append(change["new"]), names="state")

    pending.widget.approve_button.click()
    pending.widget.approve_button.click()  # a second click does nothing
    wait_until(lambda: states[-1:] == ["done"], what="the approved call to finish")
    assert states == ["running", "done"]
    assert pending.result.ok and pending.result.structured == {"text": "<b>hi</b>"}
    assert pending.widget.approve_button.disabled and pending.widget.deny_button.disabled
    record = pending._repr_mimebundle_()  # what the cell's output becomes: no widget, the decision and result
    assert "application/vnd.jupyter.widget-view+json" not in record
    envelope = record["application/vnd.purra.envelope+json"]
    assert envelope["envelope"] == pending.result.to_dict()
    assert envelope["decision"]["state"] == "approved" and envelope["decision"]["how"] == "approved by a click"
    assert envelope["decision"]["argumentsDigest"] == pending.arguments_digest
    assert envelope["decision"]["arguments"] == {"text": "<b>hi</b>"}  # what was sent, for the renderer to show
    assert envelope["decision"]["argumentsLabel"] == "arguments (sent exactly as shown):"
    assert record["text/plain"].startswith("approved (approved by a click) at ")
    assert "&lt;b&gt;hi&lt;/b&gt;" in record["text/html"] and "<b>hi</b>" not in record["text/html"]
    assert pending.widget.status.value.endswith(">approved</span>")
    pending.approve()  # after a decision: nothing
    assert counts(demo)["echo"] == 1
    decisions = [row.detail for row in demo.log.events("approval")]
    assert any(d.startswith("approved by a click: echo, args ") and "declares: bind echo" in d for d in decisions)


def test_deny_sends_nothing(demo: pj.McpSession) -> None:
    pending = demo.call("add", {"a": 1, "b": 2})
    pending.widget.deny_button.click()
    assert pending.state == "denied"
    assert pending.result.error_code == "mcp_approval_denied" and pending.result.to_dict() == {
        "text": [],
        "structured": None,
    }
    pending.widget.approve_button.click()
    assert pending.state == "denied"
    assert "add" not in counts(demo)
    assert any(row.detail.startswith("denied add (denied by a click)") for row in demo.log.events("approval"))


def test_list_changed_before_the_decision_voids_the_call(demo: pj.McpSession) -> None:
    demo.bind("echo")
    pending = demo.call("echo", {"text": "x"})
    demo.connection.request(lambda client: client.call_tool("toggle_extra_tool", {}))
    wait_until(lambda: pending.state == "void", what="the pending call to turn void")
    assert pending.result.error_code == "mcp_catalog_stale"
    pending.widget.approve_button.click()
    assert pending.state == "void"
    assert "echo" not in counts(demo)
    assert any(row.detail.startswith("void: echo") for row in demo.log.events("approval"))


def test_closing_the_session_voids_the_call(demo: pj.McpSession) -> None:
    pending = demo.call("echo", {"text": "x"})
    demo.close()
    assert pending.state == "void" and pending.result.error_code == "mcp_connection_closed"
    pending.approve()
    assert pending.state == "void"


def test_raw_calls_and_code_approvals_go_through_the_same_widget(demo: pj.McpSession) -> None:
    pending = demo.call("greet", {"name": "Ada"}, raw=True)
    assert (
        "purra-raw-banner" in pending.widget.children[0].value
        and "outside the PurrA contract" in pending.widget.children[0].value
    )
    bundle = pending._repr_mimebundle_()  # pending: the live widget, and a static view for other readers
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == 'pending: approval of demo/greet({"name": "Ada"})'
    assert "outside the PurrA contract" in bundle["text/html"] and "decide in a running kernel" in bundle["text/html"]
    pending.approve()
    wait_until(lambda: pending.state == "done", what="the raw call")
    assert pending.result.content == [{"type": "text", "text": "Hello, Ada!"}]
    assert any("approved with PendingCall.approve()" in row.detail for row in demo.log.events("approval"))
    bundle = pending._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" not in bundle
    assert bundle["application/vnd.purra.raw-result+json"]["decision"]["how"] == "approved with PendingCall.approve()"


def test_invalid_arguments_never_reach_the_widget(demo: pj.McpSession) -> None:
    """A call shown to a person is checked before the approval: one PurrA would refuse never shows Approve."""
    refused = demo.call("echo", {"text": 3})
    assert isinstance(refused, pj.Envelope) and refused.error_code == "mcp_invalid_arguments"
    assert "5" not in refused.message and "3 is not of type 'string'" in refused.message, refused.message
    assert not refused.message.startswith("PurrA's check refused")  # the kit's own check, before any approval
    batch = demo.evaluate("echo", [{"text": "a"}, {"text": 3}])
    assert isinstance(batch, pj.PendingCall) and "1 rows refused before approval" in str(batch._repr_mimebundle_())
    batch.deny()


def test_the_status_widget_follows_the_session_with_no_cell_running(demo: pj.McpSession) -> None:
    status = demo.status_widget()
    assert "ready" in status.value and "13 tools, 12 callable" in status.value and "bound: none" in status.value
    demo.bind("echo")
    assert "bound: echo (read)" in status.value
    # The server announces the change on its own; the loop thread redraws the widget.
    demo.connection.request(lambda client: client.call_tool("toggle_extra_tool", {}))
    wait_until(lambda: "stale" in status.value, what="the status to show stale")
    demo.refresh()
    assert "ready" in status.value and "14 tools, 13 callable" in status.value
    demo.close()
    assert "closed" in status.value


def test_cancel_on_a_running_call_stops_it_on_the_server(demo: pj.McpSession) -> None:
    pending = demo.call("sleep", {"seconds": 30})
    assert pending.widget.cancel_button.disabled  # nothing runs before the approval
    pending.widget.approve_button.click()
    wait_until(lambda: "sleep: 30 s" in server_said(demo), what="the call to reach the server")
    wait_until(lambda: " s (timeout " in pending.widget.status.value, what="the elapsed time to show")
    assert "approved, running" in pending.widget.status.value
    pending.widget.cancel_button.click()
    wait_until(lambda: pending.state == "done", what="the cancelled call to settle")
    assert pending.result.error_code == "mcp_interrupted" and "cancelled by a click" in pending.result.message
    assert pending.widget.cancel_button.disabled
    wait_until(lambda: "sleep: cancelled" in server_said(demo), what="the server's own word that it stopped")
    assert demo.state == "ready" and demo.ping() >= 0


def test_every_widget_output_carries_its_model_id_and_an_escaped_static_view() -> None:
    """An approval (one call, a batch) and a form each carry, beside ipywidgets' view, our MIME type: the same
    model id, the static view the extension shows once the kernel is gone, its buttons and why they are dead;
    a hostile server's tool name is escaped text in it."""
    evil = "<img src=x onerror=window.__pwned=1>"  # the name raw_server.py --call-result xss gives a tool
    with pj.connect(raw_config("xss", "--call-result", "xss")) as session:
        call = session.call(evil, {"x": "<b>x</b>"}, raw=True)
        batch = session.evaluate(evil, [{"x": "<b>x</b>"}], raw=True)
        form = session.form(evil)
        outputs = {"call": (call._repr_mimebundle_(), ["Approve", "Deny", "Cancel"], "decide"),
                   "batch": (batch._repr_mimebundle_(), ["Approve", "Deny", "Stop"], "decide"),
                   "form": (form.bundle(), ["Review call"], "fill in the form")}  # fmt: skip
        for name, (bundle, buttons, again) in outputs.items():
            static = bundle[WIDGET_MIME]
            assert static["model_id"] == bundle[WIDGET_VIEW_MIME]["model_id"], name
            assert static["html"] == bundle["text/html"] and static["text"] == bundle["text/plain"], name
            assert static["buttons"] == buttons, name
            assert set(static["labels"]) == {"restarted", "gone", "noKernel"}, name
            assert static["labels"]["restarted"] == f"the kernel restarted: run the cell again to {again}", name
            assert_safe(static["html"], evil)
        assert "pending: decide in a running kernel" in outputs["call"][0][WIDGET_MIME]["html"]
        assert f"argument form for {evil}" in outputs["form"][0][WIDGET_MIME]["text"]
        call.deny()
        batch.deny()
        assert WIDGET_MIME not in call._repr_mimebundle_()  # settled: a record, no widget
