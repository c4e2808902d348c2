"""Replays: a session recorded against the demo server, its tool calls sent again to a changed demo (a notes store
that is not empty, one more tool) and to the same demo over stdio: the table names the call whose answer differs and
where, the verdicts and the digest that changed; one approval covers the replay, in code or by a click."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import decided, demo_config, demo_in_memory

import purra_jupyter as pj
from purra_jupyter._base.transcript import Transcript
from purra_jupyter._base.wire import BINDING_MISSING, CONFIG_INVALID, INVALID_ARGUMENTS
from purra_jupyter._evaluation.replays import REPLAY_COLUMNS
from purra_jupyter.demo.server import EXTRA_TOOL, build_server

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_documents", {"query": "PurrA", "limit": 2}),
    ("echo", {"text": "the same"}),
    ("list_notes", {}),
    ("add", {"a": 2, "b": 3}),
]


def record(path: Path, server: Any = None, calls: list[tuple[str, dict[str, Any]]] = CALLS) -> str:
    """A session's transcript saved to ``path``; the catalog's digest then."""
    config = pj.ServerConfig("recorded", server=server or build_server())
    with pj.connect(config, approval="auto", record=True) as session:
        for tool, arguments in calls:
            assert session.call(tool, arguments, raw=True).ok, tool
        session.transcript.save(path)
        return session.catalog.digest


def changed_demo() -> Any:
    """A later 'version' of the demo: a note in its store (list_notes answers otherwise) and one more tool."""
    server = build_server()
    server.notes["note-1"] = "written by the new version"
    server.extra_tool_listed = True
    return server


def test_a_replay_on_a_changed_server_names_the_call_that_differs(tmp_path: Path) -> None:
    path = tmp_path / "demo.jsonl"
    digest_then = record(path)
    with pj.connect(pj.ServerConfig("changed", server=changed_demo()), approval="auto") as changed:
        frame = changed.replay(path, approve=True)
        summary = frame.attrs["summary"]
        assert list(frame.columns) == list(REPLAY_COLUMNS)
        assert frame["tool"].tolist() == [tool for tool, _ in CALLS]
        assert frame["same"].tolist() == [True, True, False, True]
        differs = frame.loc[frame["tool"] == "list_notes", "difference"].item()
        assert differs.startswith('content[0].text: "no notes" → "note-1\\twritten by the new version"'), differs
        assert frame["then_ok"].all() and frame["now_ok"].all()
        assert frame["then_ms"].notna().all() and frame["now_ms"].notna().all()
        assert set(frame["verdict_then"]) == set(frame["verdict_now"]) == {"callable"}
        assert summary.counts == {"same": 3, "different": 1} and summary.calls == 4
        assert summary.digest_then == digest_then and summary.digest_now == changed.catalog.digest != digest_then
        assert summary.verdicts == [f"'{EXTRA_TOOL}': added"]  # (each name quoted)
        assert (
            "different 1" in repr(summary)
            and "&#x27;extra_tool&#x27;: added" in summary._repr_mimebundle_()["text/html"]
        )
        approvals = [row.detail for row in changed.log.events("approval")]
        assert any(detail.startswith("approved in code: replay of 4 recorded calls") for detail in approvals)


def test_pj_replay_on_the_same_server_over_stdio_finds_every_answer_the_same_and_closes(tmp_path: Path) -> None:
    path = tmp_path / "demo.jsonl"
    record(path)
    frame = pj.replay(path, demo_config("again"), approve=True)
    assert frame["same"].all() and frame.attrs["summary"].verdicts == []
    assert frame.attrs["summary"].digest_then == frame.attrs["summary"].digest_now
    assert pj.sessions() == []  # decided in code: the session closed once done


def test_one_approval_covers_the_replay_and_a_deny_sends_nothing(tmp_path: Path) -> None:
    path = tmp_path / "demo.jsonl"
    record(path)
    with pj.connect(demo_in_memory("asked")) as session:
        pending = session.replay(path)
        assert pending.state == "pending"
        html = pending._repr_mimebundle_()["text/html"]
        assert "Approve this replay of recorded MCP calls?" in html and "&#x27;search_documents&#x27; ×1" in html
        assert "4 of 4 recorded calls from" in html and "&quot;tool&quot;: &quot;list_notes&quot;" in html
        frame = decided(pending, "approve")
        assert frame["same"].all()
        denied = decided(session.replay(path), "deny")
        assert denied["same"].isna().all() and set(denied["now_error_code"]) == {"mcp_approval_denied"}
        calls = [row.detail for row in session.log.events("call")]
        assert len(calls) == len(CALLS)  # the approved replay's calls; the denied replay is one row of its own
        denials = [row.detail for row in session.log.events("approval") if "denied" in row.detail]
        assert len(denials) == 1 and f": {len(CALLS)} rows, args " in denials[0], denials


def test_a_call_whose_tool_is_gone_or_whose_arguments_no_longer_fit_is_not_sent(tmp_path: Path) -> None:
    path = tmp_path / "changed.jsonl"
    record(path, changed_demo(), [(EXTRA_TOOL, {}), ("echo", {"text": "x"}), ("echo", {"text": "y"})])
    sent = '"arguments":{"text":"y"}'  # (the file is compact JSON Lines)
    assert path.read_text().count(sent) == 1
    path.write_text(path.read_text().replace(sent, '"arguments":{"text":7}'))  # as if echo's schema had changed
    with pj.connect(pj.ServerConfig("plain", server=build_server()), approval="auto") as plain:
        frame = plain.replay(path, approve=True)
    gone, echoed, misfit = (frame.iloc[row] for row in range(3))
    assert gone["now_error_code"] == BINDING_MISSING and gone["difference"].startswith("not sent: ")
    assert gone["verdict_then"] == "callable" and gone["verdict_now"] == "not listed"
    assert echoed["same"] and misfit["now_error_code"] == INVALID_ARGUMENTS
    assert frame.attrs["summary"].counts == {"not sent": 2, "same": 1}
    assert f"'{EXTRA_TOOL}': removed" in frame.attrs["summary"].verdicts


def test_a_transcript_without_calls_is_refused(tmp_path: Path) -> None:
    path = Transcript("x", "stdio", "x", lambda text: text).save(tmp_path / "empty.jsonl")
    with pj.connect(pj.ServerConfig("plain", server=build_server())) as plain:
        with pytest.raises(pj.McpSessionError) as raised:
            plain.replay(path)
    assert raised.value.code == CONFIG_INVALID and "holds no tools/call to replay" in raised.value.message
