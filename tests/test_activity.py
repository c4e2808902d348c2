"""What the server says while a call runs: its progress, its log lines, a task's status, shown under the call.

A chatty server of our own (in memory: what is tested is the kit) sends progress and log messages from inside a
tool call, a hostile one sends markup, a flooding one thousands of lines; server-everything (pinned in
tests/servers, over real pipes) reports the progress of ``trigger-long-running-operation`` and runs
``simulate-research-query`` as a task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from conftest import assert_safe, wait_until
from mcp.server.lowlevel import Server

import purra_jupyter as pj
from purra_jupyter._base.activity import LINES_KEPT, LINES_PER_TICK
from purra_jupyter._base.wire import (
    CONFIG_INVALID,
    DONE,
    EVENT_SERVER_LOG,
    EVENT_TASK,
    INTERRUPTED,
    RUNNING,
    TIMEOUT,
    TOOL_ERROR,
    WIDGET_MIME,
)
from purra_jupyter._purra.calls import TASK_REQUIRED_NOTE
from purra_jupyter._ui.records import ACTIVITY_LABEL

EVERYTHING = Path(__file__).parent / "servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
HOSTILE = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
FLOOD = 3_000


def chatty_server() -> Server[Any, Any]:
    """``speak(lines, steps)``: ``lines`` log messages, then ``steps`` progress notifications (when asked for);
    ``wait_for(word)`` runs until the test lets it go (a call seen while it runs)."""
    server: Server[Any, Any] = Server("chatty")
    release: dict[str, Any] = {}

    @server.set_logging_level()
    async def set_level(level: types.LoggingLevel) -> None:
        return None

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        schema = {"type": "object", "properties": {"lines": {"type": "integer"}, "steps": {"type": "integer"},
                                                   "text": {"type": "string"}}}  # fmt: skip
        return [types.Tool(name="speak", inputSchema=schema)]

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        context = server.request_context
        text = arguments.get("text", "working")
        for index in range(arguments.get("lines", 0)):
            await context.session.send_log_message("info", f"{text} {index}", logger="chatty")
        token = context.meta.progressToken if context.meta is not None else None
        for step in range(1, arguments.get("steps", 0) + 1):
            if token is not None:
                await context.session.send_progress_notification(token, step, 4, message=f"{text} step {step}")
        release.setdefault("calls", []).append(token)
        return [types.TextContent(type="text", text="spoken")]

    server.release = release  # type: ignore[attr-defined]
    return server


@pytest.fixture
def chatty() -> Any:
    with pj.connect(pj.ServerConfig("chatty", server=chatty_server()), approval="prompt") as session:
        yield session


def settled(pending: Any) -> Any:
    pending.approve()
    wait_until(lambda: pending.state == DONE, what="the call settles")
    return pending.result


def test_a_raw_call_asks_for_progress_and_its_log_lines_and_progress_stay_with_the_call(chatty: Any) -> None:
    pending = chatty.call("speak", {"lines": 3, "steps": 4}, raw=True)
    result = settled(pending)
    assert result.ok, result
    view = pending.activity.view
    assert view.progress is not None and view.progress.words() == "progress 4 of 4 (100%): working step 4"
    assert view.lines == ("info chatty: working 0", "info chatty: working 1", "info chatty: working 2")
    assert [row.detail for row in chatty.log.events(EVENT_SERVER_LOG)][-3:] == list(view.lines)
    record = pending._repr_mimebundle_()
    assert (
        f"{ACTIVITY_LABEL}:\n  progress 4 of 4 (100%): working step 4\n  info chatty: working 0"
        in (record["text/plain"])
    )


def test_a_purra_call_shows_the_servers_log_lines_and_sends_no_progress_token(chatty: Any) -> None:
    """purra-mcp 1.0.3 sends tools/call as a PurrA host does, with no progress token: the server's log lines still
    show under the call, progress does not (the server was never asked for it)."""
    pending = chatty.call("speak", {"lines": 2, "steps": 4})
    result = settled(pending)
    assert result.ok, result
    assert pending.activity.view.progress is None
    assert pending.activity.view.lines == ("info chatty: working 0", "info chatty: working 1")


def test_a_call_approved_in_code_prints_what_the_server_says_as_lines_of_text(
    chatty: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    result = chatty.call("speak", {"lines": 2, "steps": 4}, raw=True, approve=True)
    assert result.ok, result
    printed = capsys.readouterr().out.splitlines()
    assert "  progress 4 of 4 (100%): working step 4" in printed, printed
    assert printed[-2:] == ["  server log: info chatty: working 0", "  server log: info chatty: working 1"], printed


def test_a_flood_of_log_lines_is_bounded_under_the_call_and_in_what_the_cell_prints(
    chatty: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    pending = chatty.call("speak", {"lines": FLOOD}, raw=True)
    redraws: list[str] = []
    pending.widget.activity.words.observe(lambda change: redraws.append(change["new"]), names="value")
    assert settled(pending).ok
    view = pending.activity.view
    assert view.line_count == FLOOD and len(view.lines) == LINES_KEPT
    assert view.lines[-1] == f"info chatty: working {FLOOD - 1}"
    assert f"… {FLOOD - LINES_KEPT} earlier log lines (all in the session log)" in view.summary()
    wait_until(lambda: redraws, what="the last redraw (on the loop, after the call settled)")
    assert len(redraws) < FLOOD / 20, len(redraws)  # a redraw per tick, not per message
    assert len(chatty.log.events(EVENT_SERVER_LOG)) >= FLOOD

    assert chatty.call("speak", {"lines": FLOOD}, raw=True, approve=True).ok
    printed = capsys.readouterr().out.splitlines()
    ticks = "\n".join(printed).split("more server log lines (all in the session log)")  # each overflow, one tick
    assert len(ticks) > 1, printed
    # (a tick that had no more to drop prints under the last marker: two ticks' lines at most)
    assert all(tick.count("server log: ") <= 2 * LINES_PER_TICK for tick in ticks), printed
    assert len(printed) < FLOOD / 10, len(printed)


def test_hostile_log_text_is_text_in_the_widget_the_record_and_the_printed_lines(
    chatty: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    pending = chatty.call("speak", {"lines": 1, "steps": 1, "text": HOSTILE}, raw=True)
    assert settled(pending).ok
    pending.widget.activity.draw()
    assert "&lt;script&gt;" in pending.widget.activity.words.value
    assert_safe(pending.widget.activity.words.value, HOSTILE)
    record = pending._repr_mimebundle_()
    assert_safe(record["text/html"], HOSTILE)
    assert HOSTILE in record["text/plain"]
    assert chatty.call("speak", {"lines": 1, "text": HOSTILE}, raw=True, approve=True).ok
    assert f"  server log: info chatty: {HOSTILE} 0" in capsys.readouterr().out.splitlines()


def test_task_is_raw_only_and_for_tools_that_support_tasks(chatty: Any) -> None:
    with pytest.raises(pj.McpSessionError) as purra:
        chatty.call("speak", {}, task=True)
    assert purra.value.code == CONFIG_INVALID and "Add raw=True" in purra.value.message
    with pytest.raises(pj.McpSessionError) as unsupported:
        chatty.call("speak", {}, raw=True, task=True)
    assert unsupported.value.code == CONFIG_INVALID
    assert "'speak' does not run as a task (its execution.taskSupport is not given)" in unsupported.value.message


# --- server-everything, over real pipes ----------------------------------------------------------------------


@pytest.fixture
def everything() -> Any:
    config = pj.ServerConfig("everything", command="node", args=[str(EVERYTHING), "stdio"], timeout=30)
    with pj.connect(config, approval="prompt") as session:
        yield session


@pytest.mark.published  # a published MCP server from npm
def test_server_everything_reports_its_progress_under_the_running_call(everything: Any) -> None:
    pending = everything.call("trigger-long-running-operation", {"duration": 2, "steps": 4}, raw=True)
    pending.approve()
    wait_until(lambda: pending.activity.view.progress is not None, what="the first progress notification")
    assert pending.state == RUNNING  # shown while the call runs, not at its end
    pending.widget.activity.draw()
    assert pending.widget.activity.bar.layout.display is None and 0 < pending.widget.activity.bar.value < 1
    assert "progress 1 of 4 (25%)" in pending.widget.activity.words.value
    wait_until(lambda: pending.state == DONE, what="the call settles")
    assert pending.result.ok and pending.activity.view.progress.words() == "progress 4 of 4 (100%)"


@pytest.mark.published  # a published MCP server from npm
def test_simulate_research_query_runs_as_a_task_to_completion(
    everything: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    result = everything.call("simulate-research-query", {"topic": "cats"}, raw=True, task=True, approve=True)
    assert result.ok, result
    assert "# Research Report: cats" in result.content[0]["text"]
    assert result.message.startswith("ran as task ") and result.message.endswith("(completed)")
    printed = capsys.readouterr().out
    assert "working: Gathering sources..." in printed and "working: Generating report..." in printed, printed
    events = [row.detail for row in everything.log.events(EVENT_TASK)][-2:]
    assert events[0].startswith("simulate-research-query: task ") and events[0].endswith("created (working)")
    assert events[1].endswith(" completed")


@pytest.mark.published  # a published MCP server from npm
def test_a_task_cancelled_with_the_button_is_cancelled_on_the_server(everything: Any) -> None:
    pending = everything.call("simulate-research-query", {"topic": "dogs"}, raw=True, task=True)
    assert WIDGET_MIME in pending._repr_mimebundle_()
    pending.approve()
    wait_until(lambda: pending.activity.view.task is not None, what="the task is created")
    pending.widget.cancel_button.click()
    wait_until(lambda: pending.state == DONE, what="the cancelled call settles")
    assert pending.result.error_code == INTERRUPTED
    assert pending.activity.view.task.status == "cancelled"
    assert everything.log.events(EVENT_TASK)[-1].detail.endswith("cancelled on the server (cancelled)")


@pytest.mark.published  # a published MCP server from npm
def test_a_task_that_outlives_its_timeout_is_cancelled_on_the_server(everything: Any) -> None:
    result = everything.call("simulate-research-query", {"topic": "slow"}, raw=True, task=True, approve=True,
                             timeout=1.5)  # fmt: skip
    assert result.error_code == TIMEOUT, result
    assert everything.log.events(EVENT_TASK)[-1].detail.endswith("cancelled on the server (cancelled)")
    assert everything.ping() > 0  # the session goes on


@pytest.mark.published  # a published MCP server from npm
def test_a_task_required_tool_called_without_a_task_says_how_to_run_it(everything: Any) -> None:
    result = everything.call("simulate-research-query", {"topic": "x"}, raw=True, approve=True)
    assert result.error_code == TOOL_ERROR and result.message == TASK_REQUIRED_NOTE
    assert "requires task augmentation" in result.content[0]["text"]


@pytest.mark.published  # a published MCP server from npm
def test_mcp_call_task_runs_the_task_from_the_magic(ip: Any) -> None:
    session = ip.run_line_magic("mcp_connect", f"ev -- node {EVERYTHING} stdio")
    try:
        result = ip.run_line_magic("mcp_call", 'ev simulate-research-query --raw --task --yes {"topic": "owls"}')
        assert result.ok and "# Research Report: owls" in result.content[0]["text"]
    finally:
        session.close()
