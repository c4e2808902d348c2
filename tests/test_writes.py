"""Write tools under PurrA's confirm policy: bound through purra-mcp's ``discover_mcp_write_tools``, every call
behind its own approval, results with purra's ``effect_state``; against the demo's notes store in memory (the
published mcp-server-git's writes: test_published_servers.py; writes over HTTP: test_session.py)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from conftest import (
    assert_safe,
    bind_notes,
    decided,
    demo_in_memory,
    discovered_by_purra,
    notes,
    server_said,
    wait_until,
)
from IPython.core.error import UsageError

import purra_jupyter as pj
from purra_jupyter._base.markup import escape
from purra_jupyter._base.wire import UNKNOWN
from purra_jupyter._purra.envelope import EFFECT_NOTES, Envelope
from purra_jupyter._ui.approval import EFFECT_BANNERS, PendingCall

EMPTY = {"text": [], "structured": None}


@pytest.fixture
def demo() -> Iterator[pj.McpSession]:
    with pj.connect(demo_in_memory(), approval="auto") as session:
        yield session


def counts(session: pj.McpSession) -> dict[str, int]:
    return session.connection.request(lambda client: client.call_tool("call_counts", {})).structuredContent["counts"]


# --- the demo's notes store -------------------------------------------------------------------------------


def test_a_write_and_a_destructive_call_each_denied_once_and_approved_once(demo: pj.McpSession) -> None:
    bind_notes(demo)
    read = demo.call("echo", {"text": "auto"})
    assert isinstance(read, Envelope) and read.ok  # the session's auto policy approves reads ...
    assert read.effect_state == "not_started"  # ... and a read changes nothing, as purra reports it

    pending = demo.call("add_note", {"text": "first"})
    assert isinstance(pending, PendingCall) and pending.state == "pending"  # ... but never a write
    denied = decided(pending, "deny")
    assert denied.error_code == "mcp_approval_denied" and denied.effect_state == "not_started"
    assert notes(demo) == [] and "add_note" not in counts(demo)  # nothing reached the server

    added = decided(demo.call("add_note", {"text": "first"}), "approve")
    assert added.ok and added.effect_state == "committed" and added.structured == {"id": "note-1", "count": 1}
    assert notes(demo) == [{"id": "note-1", "text": "first"}]

    pending = demo.call("delete_note", {"id": "note-1"})
    assert isinstance(pending, PendingCall)
    assert decided(pending, "deny").effect_state == "not_started"
    assert notes(demo) == [{"id": "note-1", "text": "first"}]
    gone = decided(demo.call("delete_note", {"id": "note-1"}), "approve")
    assert gone.ok and gone.effect_state == "committed" and notes(demo) == []
    assert counts(demo)["add_note"] == 1 and counts(demo)["delete_note"] == 1

    in_code = demo.call("add_note", {"text": "second"}, approve=True)  # allowed, and logged as such
    assert in_code.effect_state == "committed" and notes(demo) == [{"id": "note-2", "text": "second"}]
    approvals = [row.detail for row in demo.log.events("approval")]
    assert any(d.startswith("approved in code: add_note (write), args ") for d in approvals), approvals
    assert any(d.startswith("approved by a click: delete_note (destructive)") for d in approvals), approvals
    assert not any("auto policy: add_note" in d or "auto policy: delete_note" in d for d in approvals)
    binds = [row.detail for row in demo.log.events("bind")]
    assert "bound add_note as write tool add_note with pj.allow_any_scope: no scope is checked" in binds


def test_the_deny_policy_refuses_a_write_approved_in_code() -> None:
    with pj.connect(demo_in_memory(), approval="deny") as session:
        bind_notes(session)
        refused = session.call("add_note", {"text": "x"}, approve=True)
        assert refused.error_code == "mcp_approval_denied" and refused.effect_state == "not_started"
        assert notes(session) == []


def test_interrupt_during_a_slow_write_after_dispatch_leaves_its_effect_unknown(demo: pj.McpSession) -> None:
    bind_notes(demo)

    def interrupt_when_the_server_waits() -> None:
        wait_until(lambda: "add_note: waiting 20" in server_said(demo), what="the server to start the slow write")
        os.kill(os.getpid(), signal.SIGINT)

    watcher = threading.Thread(target=interrupt_when_the_server_waits)
    watcher.start()
    result = demo.call("add_note", {"text": "slow", "delay_seconds": 20}, approve=True)  # a result, not a raise
    watcher.join()
    assert result.error_code == "mcp_canceled" and result.effect_state == "unknown"
    assert result.to_dict() == EMPTY
    assert EFFECT_NOTES[UNKNOWN] in repr(result)
    html = result._repr_mimebundle_()["text/html"]
    assert "purra-effect-unknown" in html and escape(EFFECT_NOTES[UNKNOWN]) in html
    assert result._repr_mimebundle_()["application/vnd.purra.envelope+json"]["effectState"] == "unknown"
    assert demo.state == "ready"
    # the server was told to cancel the write; here it had not stored the note yet (the kit cannot know that)
    wait_until(lambda: "add_note: cancelled before storing" in server_said(demo), what="the server to stop the write")
    assert demo.ping() >= 0 and demo.state == "ready"
    assert notes(demo) == []

    timed_out = demo.call("add_note", {"text": "late", "delay_seconds": 5}, approve=True, timeout=0.5)
    assert (timed_out.error_code, timed_out.effect_state) == ("mcp_canceled", "unknown")
    assert demo.call("add_note", {"text": "after"}, approve=True).effect_state == "committed"
    assert demo.state == "ready"


def test_cancel_on_a_running_write_settles_it_unknown(demo: pj.McpSession) -> None:
    bind_notes(demo)
    pending = demo.call("add_note", {"text": "slow", "delay_seconds": 20})
    pending.widget.approve_button.click()
    wait_until(lambda: "add_note: waiting 20" in server_said(demo), what="the server to start the slow write")
    pending.widget.cancel_button.click()
    wait_until(lambda: pending.state == "done", what="the cancelled write to settle")
    assert (pending.result.error_code, pending.result.effect_state) == ("mcp_canceled", "unknown")
    assert pending._repr_mimebundle_()["text/plain"].startswith("cancelled (approved by a click)")


def test_a_batch_of_writes_needs_one_approval_and_runs_one_row_at_a_time(demo: pj.McpSession) -> None:
    bind_notes(demo)
    rows = pd.DataFrame({"text": ["a", "b", "", "c"]})
    with pytest.raises(pj.McpSessionError) as caught:
        demo.evaluate("add_note", rows, concurrency=2, approve=True)
    assert caught.value.code == "mcp_evaluate_not_concurrency_safe"
    pending = demo.evaluate("add_note", rows)  # auto approves no write, a batch neither
    assert isinstance(pending, PendingCall) and pending.state == "pending"
    html = pending.widget.children[0].value
    assert EFFECT_BANNERS["write"] in html and "3 calls, at most 1 at once" in html
    assert "1 rows refused before approval" in html
    frame = decided(pending, "approve")
    assert list(frame["effect_state"]) == ["committed", "committed", "not_started", "committed"]
    assert str(frame["effect_state"].dtype) == "string"
    assert [note["text"] for note in notes(demo)] == ["a", "b", "c"]
    assert counts(demo)["add_note"] == 3


def test_the_approval_widget_shows_the_effect_identity_digest_and_arguments(demo: pj.McpSession) -> None:
    bind_notes(demo)
    pending = demo.call("delete_note", {"id": "<b>note-1</b>"})
    html = pending.widget.children[0].value
    snapshot = demo.write_bindings
    assert EFFECT_BANNERS["destructive"] in html and "purra-effect-destructive" in html
    assert "PurrA destructive tool (confirm policy)" in html
    entry = next(e for e in snapshot["entries"] if e["remoteName"] == "delete_note")
    identity = entry["authorization"]
    assert identity["bindingId"] == "demo/delete_note" and identity["scopeId"] == "notes"
    assert f"demo/delete_note (revision {identity['bindingRevision']})" in html
    assert f"notes (revision {identity['scopeRevision']})" in html
    assert snapshot["revisionDigest"] in html  # the write catalog's digest the approval is bound to
    assert "&lt;b&gt;note-1&lt;/b&gt;" in html
    assert_safe(html, "<b>note-1</b>")
    record = decided(pending, "deny")
    assert record.error_code == "mcp_approval_denied"
    bundle = pending._repr_mimebundle_()
    assert bundle["application/vnd.purra.envelope+json"]["decision"]["effect"] == "destructive"
    assert "demo/delete_note (destructive)" in bundle["text/plain"]


def test_a_call_planned_before_its_write_binding_changed_is_void(demo: pj.McpSession) -> None:
    demo.bind("add_note", effect="write", scope_validator=pj.allow_any_scope)
    pending = demo.call("add_note", {"text": "x"})
    before = demo.write_bindings["revisionDigest"]
    demo.bind("delete_note", effect="destructive", scope_validator=pj.allow_any_scope)  # a new write catalog
    assert demo.write_bindings["revisionDigest"] != before
    pending.approve()
    assert pending.state == "void" and pending.result.error_code == "mcp_catalog_stale"
    assert "binding changed" in pending.result.message and notes(demo) == []


# --- binding writes, and honest read declarations ------------------------------------------------------------


def test_a_read_declaration_against_the_servers_hints_is_refused(demo: pj.McpSession) -> None:
    for tool in ("add_note", "delete_note"):
        with pytest.raises(pj.McpSessionError) as caught:
            demo.bind(tool)
        assert caught.value.code == "mcp_not_read_only"
        assert "readOnlyHint: false" in caught.value.message
        assert "effect='write'" in caught.value.message and "assume_read_only=True" in caught.value.message
        with pytest.raises(pj.McpSessionError) as caught:  # calling it unbound would declare it read
            demo.call(tool, {"text": "x"} if tool == "add_note" else {"id": "x"}, approve=True)
        assert caught.value.code == "mcp_not_read_only"
    assert "add_note" not in counts(demo) and demo.bindings is None and demo.write_bindings is None
    entry = demo.bind("add_note", assume_read_only=True)
    assert entry["policy"]["mode"] == "read"
    logged = [row.detail for row in demo.log.events("bind")]
    assert any("although its server marks it readOnlyHint: false (assume_read_only=True)" in d for d in logged)
    asked = demo.call("add_note", {"text": "x"})  # hinted as a write: the auto policy still asks a person
    assert isinstance(asked, PendingCall) and asked.state == "pending"
    asked.deny()
    assert demo.call("add_note", {"text": "x"}, approve=True).effect_state == "not_started"  # purra's word: a read
    assert demo.catalog["add_note"].bound_label == "add_note (read)"
    assert demo.bind("echo")["policy"]["mode"] == "read"  # hints that say read change nothing


def test_a_write_binding_needs_a_scope_validator_and_a_valid_identity(demo: pj.McpSession) -> None:
    attempts = [
        {"effect": "write"},
        {"effect": "write", "scope_validator": "not callable"},
        {"effect": "remove", "scope_validator": pj.allow_any_scope},
        {"effect": "write", "scope_validator": pj.allow_any_scope, "concurrency_safe": True},
        {"effect": "write", "scope_validator": pj.allow_any_scope, "scope_id": " padded "},
    ]
    for options in attempts:
        with pytest.raises(pj.McpSessionError) as caught:
            demo.bind("add_note", **options)
        assert caught.value.code == "mcp_binding_invalid", options
    assert demo.write_bindings is None
    demo.bind("add_note", effect="write", scope_validator=pj.allow_any_scope, local_name="note")
    with pytest.raises(pj.McpSessionError) as caught:
        demo.bind("echo", local_name="note")  # reads and writes share the names a host registers
    assert caught.value.code == "mcp_name_conflict"
    before = demo.write_bindings
    again = demo.bind("add_note", effect="write", scope_validator=pj.allow_any_scope, local_name="note")  # a rerun
    assert again["localName"] == "note" and demo.write_bindings == before
    assert "is already bound so; kept as it was" in demo.log.events("bind")[-1].detail
    with pytest.raises(pj.McpSessionError) as caught:
        demo.bind("add_note", effect="write", scope_validator=pj.allow_any_scope)
    assert caught.value.code == "mcp_binding_invalid" and "already bound as write tool 'note'" in caught.value.message


def test_the_scope_validator_decides_before_anything_is_sent(demo: pj.McpSession) -> None:
    def only_short_notes(state: Any, arguments: dict[str, Any], signal: Any = None) -> str | None:
        return None if len(arguments["text"]) <= 5 else "notes of this scope are at most 5 characters"

    def broken(state: Any, arguments: dict[str, Any], signal: Any = None) -> None:
        raise RuntimeError("validator bug")

    demo.bind("add_note", effect="write", scope_validator=only_short_notes, scope_id="short", scope_revision="2")
    demo.bind("delete_note", effect="destructive", scope_validator=broken)
    denied = demo.call("add_note", {"text": "far too long"}, approve=True)
    assert (denied.error_code, denied.effect_state) == ("mcp_scope_denied", "not_started")
    failed = demo.call("delete_note", {"id": "note-1"}, approve=True)
    assert (failed.error_code, failed.effect_state) == ("mcp_host_error", "not_started")
    assert "validator bug" in failed.message
    assert "add_note" not in counts(demo) and "delete_note" not in counts(demo)
    assert demo.call("add_note", {"text": "ok"}, approve=True).effect_state == "committed"


def test_a_refresh_that_drops_a_write_binding_says_so(demo: pj.McpSession) -> None:
    demo.connection.request(lambda client: client.call_tool("toggle_extra_tool", {}))
    wait_until(lambda: demo.state == "stale", what="the session to turn stale")
    demo.refresh()
    demo.bind("extra_tool", effect="write", scope_validator=pj.allow_any_scope)
    demo.bind("add_note", effect="write", scope_validator=pj.allow_any_scope)
    demo.connection.request(lambda client: client.call_tool("toggle_extra_tool", {}))
    wait_until(lambda: demo.state == "stale", what="the session to turn stale")
    catalog = demo.refresh()
    assert catalog.dropped == ("extra_tool",)
    assert [entry["remoteName"] for entry in demo.write_bindings["entries"]] == ["add_note"]
    logged = [row.detail for row in demo.log.events("bind")]
    assert any(d.startswith("dropped the binding of extra_tool (a write tool, extra_tool)") for d in logged)
    demo.unbind("add_note")
    assert demo.write_bindings is None
    assert any(d == "unbound add_note (add_note, write)" for d in (row.detail for row in demo.log.events("bind")))


def test_the_write_snapshot_and_envelopes_equal_purras(demo: pj.McpSession) -> None:
    """The same bindings through purra-mcp directly: the same snapshot (digest included), and for the same
    calls the same envelope, error code and effect state as its registration handler."""
    bind_notes(demo)
    host = discovered_by_purra(demo)
    assert demo.write_bindings == host.snapshot.to_mapping()
    assert demo.write_bindings["schemaVersion"] == 2
    handlers = {registration.schema.name: registration for registration in host.registrations}
    assert handlers["delete_note"].approval_binding["bindingRevision"] == demo.write_bindings["revisionDigest"]
    for name, arguments in [("delete_note", {"id": "missing"}), ("add_note", {"text": ""})]:
        expected = demo.connection.request(lambda client, n=name, a=arguments: handlers[n].handler(None, a))
        envelope = demo.call(name, arguments, approve=True)
        assert envelope.to_dict() == EMPTY and envelope.json == expected.content
        assert (envelope.error_code, envelope.effect_state) == (expected.error_code, expected.effect_state.value)
    # a tool error after the write was sent: purra cannot say it did nothing
    assert demo.call("delete_note", {"id": "missing"}, approve=True).effect_state == "unknown"


# --- magics ---------------------------------------------------------------------------------------------------


def test_mcp_bind_binds_writes_and_refuses_a_write_without_a_scope(ip: Any) -> None:
    with pj.connect(demo_in_memory("notes")) as session:  # %mcp_bind finds any open session by its name
        ip.user_ns["short"] = lambda state, arguments, signal=None: None
        entry = ip.run_line_magic("mcp_bind", "notes add_note --write --scope-validator short --scope-id s")
        assert entry["policy"]["riskLevel"] == "write" and entry["authorization"]["scopeId"] == "s"
        assert "scope" in repr(entry) and "s (revision 1)" in repr(entry)
        entry = ip.run_line_magic("mcp_bind", "notes delete_note --destructive --allow-any-scope")
        assert entry["authorization"]["effect"] == "destructive"
        for line in (
            "notes echo --write",
            "notes echo --write --scope-validator short --allow-any-scope",
            "notes echo --write --scope-validator nothing_here",
        ):
            with pytest.raises(UsageError):
                ip.run_line_magic("mcp_bind", line)
        with pytest.raises(pj.McpSessionError) as caught:
            ip.run_line_magic("mcp_bind", "notes list_notes --as add_note")
        assert caught.value.code == "mcp_name_conflict"
        assert [e["remoteName"] for e in session.write_bindings["entries"]] == ["add_note", "delete_note"]
