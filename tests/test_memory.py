"""A server object in the kernel's own process, reached in memory through the public ``connect`` path, and who
changes the state of calls and batches: the loop thread, whichever thread decided."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import wait_until

import purra_jupyter as pj
from purra_jupyter._base import runner
from purra_jupyter._purra import calls
from purra_jupyter._purra.bindings import Bindings
from purra_jupyter.demo.server import BASE_TOOL_NAMES, build_server


def memory_config(name: str = "mem", **kwargs: Any) -> pj.ServerConfig:
    return pj.ServerConfig(name, server=build_server(), **kwargs)


def test_a_session_opens_on_the_in_memory_transport_through_connect() -> None:
    config = memory_config()
    server = config.server
    with pj.connect(config, approval="auto") as session:
        assert (session.state, session.transport) == ("ready", "memory")
        assert session.protocol_version == "2025-11-25"
        assert sorted(tool.name for tool in session.catalog.tools) == sorted(BASE_TOOL_NAMES)
        assert session.call("echo", {"text": "hi"}).structured == {"text": "hi"}
        assert server.call_counts["echo"] == 1  # the very object in this process answered

        slow = session.call("sleep", {"seconds": 30}, timeout=0.2)  # deadlines and cancellation as on a wire
        assert slow.error_code == "mcp_timeout"
        assert any("cancelled request" in row.detail for row in session.log.events("cancel"))
        assert session.state == "ready"
        assert session.call("add", {"a": 2, "b": 3}).structured == {"sum": 5}

        session.call("toggle_extra_tool", {})  # tools/list_changed, in memory
        wait_until(lambda: session.state == "stale", what="the catalog to turn stale")
        assert "extra_tool" in session.refresh().to_frame().index
    assert session.state == "closed"
    assert session.stderr == ""
    assert "DemoServer in this process" in session.log.events("connect")[0].detail


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"server": object()}, "server must be an MCP server object"),
        ({"server": build_server(), "args": ["x"]}, "do not apply to a server in this process"),
        ({"server": build_server(), "command": "python"}, "exactly one of command"),
        ({"server": build_server(), "url": "https://example.org/mcp"}, "exactly one of command"),
    ],
)
def test_a_config_for_a_server_in_this_process_is_checked(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(pj.McpSessionError) as raised:
        pj.ServerConfig("mem", **kwargs)
    assert raised.value.code == "mcp_config_invalid"
    assert words in raised.value.message


def test_a_config_for_a_server_in_this_process_shows_its_class_only() -> None:
    assert repr(memory_config(timeout=5)) == "ServerConfig('mem', server=<DemoServer>, timeout=5.0)"


class Changes:
    """Every change of the watched traits, with whether it happened on the loop thread."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, Any, bool]] = []

    def watch(self, owner: Any, *names: str) -> None:
        def note(change: dict[str, Any]) -> None:
            self.seen.append((type(owner).__name__, change["name"], change["new"], runner.on_loop_thread()))

        owner.observe(note, names=list(names))

    def off_loop(self) -> list[tuple[str, str, Any, bool]]:
        return [change for change in self.seen if not change[3]]


def test_calls_and_batches_change_state_on_the_loop_thread_only_whoever_decides() -> None:
    """Approved and denied in code, by a click (the kernel's thread here), cancelled while running, voided by a
    stale catalog, and a batch approved and denied: every change of a call's state and result, of a batch's
    counts and of the connection's state happens on the loop thread."""
    changes = Changes()
    session = pj.connect(memory_config())  # approval "prompt": every call is a PendingCall
    try:
        changes.watch(session.connection, "state")
        session.bind("sleep", concurrency_safe=True)

        def pending(tool: str, arguments: dict[str, Any]) -> Any:
            call = session.call(tool, arguments)
            changes.watch(call, "state", "result")
            return call

        approved = pending("echo", {"text": "code"})
        approved.approve()
        assert approved.wait().structured == {"text": "code"}

        denied = pending("echo", {"text": "no"})
        denied.deny()
        clicked = pending("echo", {"text": "click"})
        clicked.widget.approve_button.click()
        clicked.wait()
        refused = pending("echo", {"text": "click no"})
        refused.widget.deny_button.click()

        running = pending("sleep", {"seconds": 30})
        running.approve()
        wait_until(lambda: running.state == "running", what="the call to run")
        running.cancel()
        assert running.wait().error_code == "mcp_interrupted"

        batch = session.evaluate("sleep", [{"seconds": 0}] * 3, concurrency=2)
        changes.watch(batch, "state", "result")
        changes.watch(batch.job, "sent", "finished", "failed")
        batch.approve()
        assert list(batch.wait()["ok"]) == [True, True, True]
        refused_batch = session.evaluate("echo", [{"text": "a"}, {"text": "b"}])
        changes.watch(refused_batch, "state", "result")
        refused_batch.deny()

        voided = pending("echo", {"text": "late"})
        session.call("toggle_extra_tool", {}, approve=True)
        wait_until(lambda: voided.state == "void", what="the pending call to be void")

        assert [state for name, _, state, _ in changes.seen if name == "Connection"] == ["stale"]
        assert {(name, trait) for name, trait, _, _ in changes.seen} >= {
            ("PendingCall", "state"), ("PendingCall", "result"), ("Batch", "sent"), ("Batch", "finished"),
        }  # fmt: skip
        assert [call.state for call in (approved, denied, clicked, refused, running, batch, refused_batch)] == [
            "done", "denied", "done", "denied", "done", "done", "denied",
        ]  # fmt: skip
        assert changes.off_loop() == []
    finally:
        session.close()


class BuggyPlan:
    """A real call plan whose sending meets a bug: what a defect in the kit's own code does to a call."""

    def __init__(self, plan: calls.CallPlan) -> None:
        self._plan = plan

    def __getattr__(self, name: str) -> Any:
        return getattr(self._plan, name)

    async def run(self, cancel: Any, activity: Any) -> Any:
        raise KeyError("a row the kit forgot")


def test_a_bug_of_the_kit_settles_the_call_with_mcp_kit_error_and_raises_with_its_traceback() -> None:
    with pj.connect(memory_config(), approval="auto") as session:
        plan = calls.plan_call(
            session.connection, Bindings(session.connection, session.catalog), "echo", {"text": "x"}, raw=True,
            timeout=None,
        )  # fmt: skip
        call = calls.Call(BuggyPlan(plan))
        with pytest.raises(KeyError) as raised:
            call.decide(approve=True, policy="auto")
        assert raised.value.__traceback__ is not None
        assert (call.state, call.result.error_code) == ("done", "mcp_kit_error")
        assert "a bug in purra-jupyter (KeyError)" in call.result.message
        assert session.call("echo", {"text": "after"}).structured == {"text": "after"}  # the session goes on
