"""The kit against published MCP servers, each in its own process over stdio: mcp-server-time and mcp-server-git
(its writes in a temporary repository) from PyPI, the reference "everything" server from npm. Verdicts, write
snapshots and envelopes equal purra-mcp's own decisions on the same connection."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import HANG_GUARD, assert_verdicts_match_purra, decided, demo_in_memory, discovered_by_purra, wait_until

import purra_jupyter as pj
from purra_jupyter._base.wire import LOG_LEVELS
from purra_jupyter._purra.envelope import RAW_LABEL, RawResult
from purra_jupyter._ui.approval import PendingCall

BIN = Path(sys.executable).parent
EVERYTHING = Path(__file__).parent / "servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
EMPTY = {"text": [], "structured": None}


def git_config(repository: Path) -> pj.ServerConfig:
    return pj.ServerConfig("git", command=str(BIN / "mcp-server-git"), args=["--repository", str(repository)])


# --- catalogs -------------------------------------------------------------------------------------------------


def test_published_servers_verdicts_equal_purra(tmp_path: Path) -> None:
    with pj.connect(pj.ServerConfig("time", command=str(BIN / "mcp-server-time"))) as time_server:
        assert [t.name for t in time_server.catalog.tools if t.callable] == ["convert_time", "get_current_time"]
        assert_verdicts_match_purra(time_server)
    repository = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repository)], check=True)
    with pj.connect(git_config(repository)) as git_server:
        tools = git_server.catalog.tools
        assert len(tools) == 12
        assert sum(t.callable for t in tools) == 6
        for tool in tools:
            if not tool.callable:
                assert all(".default: " in reason for reason in tool.reasons), tool.reasons
        assert_verdicts_match_purra(git_server)


# --- calls ----------------------------------------------------------------------------------------------------


def test_published_time_server_envelopes() -> None:
    config = pj.ServerConfig("time", command=str(BIN / "mcp-server-time"))
    with pj.connect(config) as session:
        session.bind("get_current_time")
        ok = session.call("get_current_time", {"timezone": "UTC"}, approve=True)
        assert ok.ok and ok.structured is None  # it declares no output schema: text only
        assert json.loads(ok.text[0])["timezone"] == "UTC"
        bad = session.call("get_current_time", {"timezone": "Mars/Olympus_Mons"}, approve=True)
        assert bad.error_code == "mcp_tool_error" and bad.to_dict() == EMPTY


def test_raw_results_from_the_published_everything_server() -> None:
    assert EVERYTHING.exists(), "scripts/test installs tests/servers' npm packages"
    config = pj.ServerConfig("everything", command="node", args=[str(EVERYTHING), "stdio"])
    with pj.connect(config) as session:
        assert session.state == "ready"
        assert not session.catalog["echo"].callable  # draft-07 $schema: outside the profile
        echo = session.call("echo", {"message": "hi"}, raw=True, approve=True)
        assert isinstance(echo, RawResult) and echo.ok
        assert echo.content == [{"type": "text", "text": "Echo: hi"}]
        image = session.call("get-tiny-image", {}, raw=True, approve=True)
        kinds = [block["type"] for block in image.content]
        assert "image" in kinds and "text" in kinds
        png = next(block for block in image.content if block["type"] == "image")
        assert png["mimeType"] == "image/png"
        assert f"src='data:image/png;base64,{png['data']}'" in image._repr_mimebundle_()["text/html"]
        refused = session.call("echo", {"message": 3}, raw=True, approve=True)
        assert refused.error_code == "mcp_invalid_arguments" and refused.content == []
        assert RAW_LABEL in repr(echo)
        assert [row.detail.split(":")[0] for row in session.log.events("call")][-1] == "echo (raw)"


# --- mcp-server-git in a temporary repository ------------------------------------------------------------


def git(repository: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repository), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    git(path, "config", "user.name", "Notebook Tester")
    git(path, "config", "user.email", "tester@example.invalid")
    (path / "a.txt").write_text("one\n")
    return path


def test_git_add_commit_and_reset_as_writes_against_mcp_server_git(repository: Path) -> None:
    config = git_config(repository)

    def this_repository(state: Any, arguments: dict[str, Any], signal: Any = None) -> str | None:
        return None if arguments.get("repo_path") == str(repository) else "only the test's repository"

    with pj.connect(config, approval="auto") as session:
        with pytest.raises(pj.McpSessionError) as caught:
            session.bind("git_commit")
        assert caught.value.code == "mcp_not_read_only" and "readOnlyHint: false" in caught.value.message
        for tool in ("git_add", "git_commit"):
            session.bind(tool, effect="write", scope_validator=this_repository, scope_id=str(repository))
        session.bind("git_reset", effect="destructive", scope_validator=this_repository)
        frame = session.catalog.to_frame()
        assert frame.loc["git_commit", "bound_as"] == "git_commit (write)"
        assert frame.loc["git_reset", "bound_as"] == "git_reset (destructive)"
        assert frame.loc["git_status", "bindable_as"] == "read" and frame.loc["git_add", "bindable_as"] == "write"

        outside = session.call("git_add", {"repo_path": "/", "files": ["a.txt"]}, approve=True)
        assert (outside.error_code, outside.effect_state) == ("mcp_scope_denied", "not_started")

        staged = session.call("git_add", {"repo_path": str(repository), "files": ["a.txt"]}, approve=True)
        assert staged.ok and staged.effect_state == "committed", staged
        assert "A  a.txt" in git(repository, "status", "--short")
        pending = session.call("git_commit", {"repo_path": str(repository), "message": "first commit"})
        assert isinstance(pending, PendingCall)  # the auto policy covers reads only
        committed = decided(pending, "approve")
        assert committed.ok and committed.effect_state == "committed", committed
        assert git(repository, "log", "--format=%s").splitlines() == ["first commit"]

        (repository / "b.txt").write_text("two\n")
        session.call("git_add", {"repo_path": str(repository), "files": ["b.txt"]}, approve=True)
        assert "A  b.txt" in git(repository, "status", "--short")
        reset = decided(session.call("git_reset", {"repo_path": str(repository)}), "approve")
        assert reset.ok and reset.effect_state == "committed", reset
        assert "?? b.txt" in git(repository, "status", "--short")  # unstaged again
        assert git(repository, "log", "--format=%s").splitlines() == ["first commit"]


def test_git_write_envelopes_equal_purras_registration_handler(repository: Path) -> None:
    git(repository, "add", "a.txt")
    git(repository, "commit", "-q", "-m", "start")  # git_reset unstages against a HEAD
    (repository / "a.txt").write_text("changed\n")
    config = git_config(repository)
    with pj.connect(config) as session:
        session.bind("git_add", effect="write", scope_validator=pj.allow_any_scope)
        session.bind("git_reset", effect="destructive", scope_validator=pj.allow_any_scope)
        host = discovered_by_purra(session)
        assert session.write_bindings == host.snapshot.to_mapping()
        handlers = {registration.schema.name: registration.handler for registration in host.registrations}
        calls = [
            ("git_add", {"repo_path": str(repository), "files": ["a.txt"]}),
            ("git_reset", {"repo_path": str(repository)}),
            ("git_add", {"repo_path": str(repository), "files": ["missing.txt"]}),  # a tool error, after dispatch
        ]
        # the same sequence twice from the same repository state: first through purra-mcp, then through the kit
        expected = [
            session.connection.request(lambda client, n=name, a=arguments: handlers[n](None, a))
            for name, arguments in calls
        ]
        envelopes = [session.call(name, arguments, approve=True) for name, arguments in calls]
        for (name, _), envelope, handled in zip(calls, envelopes, expected, strict=True):
            assert envelope.json == handled.content and envelope.error_code == handled.error_code, name
            assert envelope.effect_state == handled.effect_state.value, name
        assert [envelope.effect_state for envelope in envelopes] == ["committed", "committed", "unknown"]
        assert envelopes[-1].error_code == "mcp_tool_error" and envelopes[-1].server_text


# --- what the server says (raw exploration, outside the PurrA contract) ---------------------------------------


def test_the_everything_servers_instructions_and_log_messages_reach_the_session(ip: Any) -> None:
    """server-everything's instructions are kept and shown with the session; after ``%mcp_log_level`` and
    ``toggle-simulated-logging`` its log messages (one each 5 s, random levels) arrive as ``server_log`` rows with
    their level and logger, within the hang guard."""
    ip.user_ns["EVERYTHING"] = str(EVERYTHING)
    session = ip.run_line_magic("mcp_connect", "everything -- node {EVERYTHING} stdio")
    try:
        assert session.instructions and "everything" in session.instructions.lower(), session.instructions
        assert "the server&#x27;s instructions" in session._repr_mimebundle_()["text/html"]
        ip.run_line_magic("mcp_log_level", "everything debug")
        assert "server log level 'debug' asked for" in session.log.events("setting")[-1].detail
        assert session.call("toggle-simulated-logging", {}, raw=True, approve=True).ok
        rows = wait_until(lambda: session.log.events("server_log"), timeout=2 * HANG_GUARD, what="a server log row")
        level, _, data = rows[0].detail.partition(": ")
        assert level.split()[0] in LOG_LEVELS and data, rows[0].detail
    finally:
        session.close()


def test_a_server_without_logging_says_so_and_a_bad_level_is_a_usage_error() -> None:
    with pj.connect(demo_in_memory()) as demo:
        assert demo.instructions == "Demo tools for purra-jupyter: search a tiny corpus, echo, add, sleep and more."
        with pytest.raises(pj.McpSessionError) as caught:
            demo.set_log_level("debug")
        assert caught.value.code == "mcp_capability_missing" and "offers no logging" in caught.value.message
        with pytest.raises(pj.McpSessionError) as caught:
            demo.set_log_level("loud")
        assert caught.value.code == "mcp_config_invalid" and "debug, info" in caught.value.message
