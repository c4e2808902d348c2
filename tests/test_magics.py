"""The magics through IPython's InteractiveShell (no kernel): happy paths, --help, one-line errors."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SERVERS, demo_in_memory
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import purra_jupyter as pj
from purra_jupyter._base.egress import cell_text
from purra_jupyter._purra.envelope import Envelope, RawResult
from purra_jupyter._session.session import INSTRUCTIONS_LABEL
from purra_jupyter._ui.approval import PendingCall
from purra_jupyter._ui.forms import SchemaForm
from purra_jupyter.magics import SERVER_SAID_LABEL, MagicHelp

MAGICS = [
    "mcp_connect",
    "mcp_disconnect",
    "mcp_sessions",
    "mcp_catalog",
    "mcp_bind",
    "mcp_call",
    "mcp_evaluate",
    "mcp_log",
    "mcp_log_level",
    "mcp_resources",
    "mcp_prompts",
    "mcp_read",
    "mcp_prompt",
]
STDIO_DEMO = "demo -- {sys.executable} -m purra_jupyter.demo"  # a line that describes the server: stdio
DEMO = "demo --from servers"  # the demo in memory, where the line's server is not what a test is about


@pytest.fixture(autouse=True)
def servers(ip: InteractiveShell) -> None:
    """``servers`` in the notebook, as ``pj.load_servers`` gives: an in-memory demo server for each name the tests
    connect ``--from`` it."""
    ip.user_ns["servers"] = {name: demo_in_memory(name) for name in ("demo", "auto", "other")}


@pytest.fixture
def demo(ip: InteractiveShell) -> Iterator[pj.McpSession]:
    ip.run_line_magic("config", 'McpMagics.approval = "prompt"')
    session = ip.run_line_magic("mcp_connect", DEMO)
    yield session
    session.close()


def one_line_error(ip: InteractiveShell, line: str, capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``line`` as a cell; return the one error line IPython showed (and check it showed no traceback):
    ``UsageError: <code>: …`` for a mistake in the line, ``McpSessionError: <code>: …`` for a failure at run
    time; neither names the Python API."""
    capsys.readouterr()
    result = ip.run_cell(line)
    shown = capsys.readouterr()
    text = (shown.out + shown.err).strip()
    error = result.error_in_exec
    assert isinstance(error, UsageError | pj.McpSessionError), error
    assert "Traceback" not in text, text
    if getattr(error, "server_text", ""):  # the server's words come first, in a block of their own
        *block, text = text.splitlines()
        said = cell_text(error.server_text.splitlines()[0])  # as a cell shows it: no link, no control character
        assert block[0] == f"{SERVER_SAID_LABEL}:" and said in block[1], block
    assert len(text.splitlines()) == 1, text
    code = str(error).split(":", 1)[0]
    usage = isinstance(error, UsageError)
    assert usage == (code in ("mcp_config_invalid", "mcp_invalid_arguments") or not code.startswith("mcp_")), text
    assert text.startswith("UsageError: " if usage else "McpSessionError: "), text
    assert "pj." not in text and "refresh()" not in text and "raw=True" not in text, text
    return text


def test_connect_catalog_bind_call_log_disconnect(ip: InteractiveShell, demo: pj.McpSession) -> None:
    assert demo.state == "ready" and demo.approval == "prompt"
    sessions = ip.run_line_magic("mcp_sessions", "")
    assert sessions.loc["demo", "state"] == "ready" and sessions.loc["demo", "tools"] == 13
    assert ip.run_line_magic("mcp_catalog", "demo") is demo.catalog
    entry = ip.run_line_magic("mcp_bind", 'demo add --as plus --title "Add numbers"')
    assert entry["localName"] == "plus" and entry["policy"]["title"] == "Add numbers"
    shown = entry._repr_mimebundle_()  # a small table, not a dict with enum reprs
    assert (
        repr(entry)
        == shown["text/plain"]
        == (
            "BindingEntry tool: add, local name: plus, title: Add numbers, mode: read, risk: read, concurrency safe: no"
        )
    )
    assert "'>Add numbers</td>" in shown["text/html"] and "text-align:left" in shown["text/html"]
    envelope = ip.run_line_magic("mcp_call", 'demo plus --yes {"a": 1, "b": 2}')
    assert isinstance(envelope, Envelope) and envelope.structured == {"sum": 3}
    pending = ip.run_line_magic("mcp_call", 'demo echo {"text": "hi"}')
    assert isinstance(pending, PendingCall) and pending.state == "pending"
    pending.deny()
    raw = ip.run_line_magic("mcp_call", 'demo greet --raw --yes {"name": "Ada"}')
    assert isinstance(raw, RawResult) and raw.content[0]["text"] == "Hello, Ada!"
    assert isinstance(ip.run_line_magic("mcp_call", "demo search_documents --form"), SchemaForm)
    log = ip.run_line_magic("mcp_log", "demo")
    assert {"connect", "list", "bind", "approval", "call"} <= {row.event for row in log}
    assert re.match(r"\d\d:\d\d:\d\d\.\d{3}  connect ", repr(log))  # local time, to the millisecond
    assert "white-space:pre-wrap" in log._repr_mimebundle_()["text/html"]  # each detail whole, wrapped
    ip.run_line_magic("mcp_disconnect", "demo")
    assert demo.state == "closed" and pj.sessions() == []


def test_json_on_the_line_reaches_the_tool_unmangled(ip: InteractiveShell, demo: pj.McpSession) -> None:
    ip.user_ns["b"] = "EXPANDED"
    text = 'a {b} c $b {"x": [1, {"y": "}"}]} \\" end'
    line = "demo echo --yes " + json.dumps({"text": text})
    assert ip.run_line_magic("mcp_call", line).structured == {"text": text}
    cell = json.dumps({"text": text}, indent=2)
    assert ip.run_cell_magic("mcp_call", "demo echo --yes", cell).structured == {"text": text}
    result = ip.run_cell(f"x = %mcp_call {line}")  # the magic's object can be assigned
    assert result.success and ip.user_ns["x"].structured == {"text": text}


def test_python_values_as_arguments(ip: InteractiveShell, demo: pj.McpSession) -> None:
    ip.user_ns["arguments"] = {"query": "jupyter", "limit": 2}
    envelope = ip.run_line_magic("mcp_call", "demo search_documents --yes --args arguments")
    assert envelope.ok and len(envelope.structured["hits"]) <= 2


def test_every_magic_has_help(ip: InteractiveShell) -> None:
    registered = {
        name for kind in ("line", "cell") for name in ip.magics_manager.magics[kind] if name.startswith("mcp_")
    }
    assert registered == set(MAGICS)  # a new magic joins this list, and so this test
    for magic in MAGICS:
        shown = ip.run_line_magic(magic, "--help")
        assert isinstance(shown, MagicHelp) and f"%{magic}" in shown.text, magic


def test_config_approval_sets_the_default_for_the_next_connect(ip: InteractiveShell) -> None:
    ip.run_line_magic("config", 'McpMagics.approval = "auto"')
    try:
        session = ip.run_line_magic("mcp_connect", DEMO.replace("demo", "auto", 1))
        assert session.approval == "auto"
        assert ip.run_line_magic("mcp_call", 'auto echo {"text": "no click"}').ok
        session.close()
    finally:
        ip.run_line_magic("config", 'McpMagics.approval = "prompt"')
    ip.run_line_magic("config", "McpMagics.timeout = 12.5")
    try:
        session = ip.run_line_magic("mcp_connect", STDIO_DEMO.replace("demo", "slow", 1))
        assert session.config.timeout == 12.5
        ip.run_line_magic("mcp_disconnect", "--all")
    finally:
        ip.run_line_magic("config", "McpMagics.timeout = 30.0")


def test_connect_over_http_with_headers_and_from_a_config_file(
    ip: InteractiveShell, demo_http_url: str, tmp_path: Path
) -> None:
    session = ip.run_line_magic("mcp_connect", f"web --url {demo_http_url} --header Authorization=secret-value")
    assert session.transport == "http" and session.state == "ready"
    assert "secret-value" not in repr(session.config)
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"fromfile": {"command": sys.executable,
                                                             "args": [str(SERVERS / "raw_server.py")]}}}))  # fmt: skip
    from_file = ip.run_line_magic("mcp_connect", f"fromfile --config {path}")
    assert from_file.catalog.tools[0].name == "tool_000"
    ip.run_line_magic("mcp_disconnect", "--all")
    assert pj.sessions() == []


def test_a_config_file_entry_takes_the_timeout_from_the_line_or_the_config(
    ip: InteractiveShell, tmp_path: Path
) -> None:
    raw = [str(SERVERS / "raw_server.py")]
    path = tmp_path / "mcp.json"
    entries = {"plain": {"command": sys.executable, "args": raw},
               "own": {"command": sys.executable, "args": raw, "timeout": 11}}  # fmt: skip
    path.write_text(json.dumps({"mcpServers": entries}))
    ip.run_line_magic("config", "McpMagics.timeout = 7")
    try:
        timeouts = {}
        for name, options in (("plain", ""), ("own", ""), ("plain", "--timeout 3"), ("own", "--timeout 4")):
            with ip.run_line_magic("mcp_connect", f"{name} --config {path} {options}") as session:
                timeouts[name, options] = session.config.timeout
    finally:
        ip.run_line_magic("config", "McpMagics.timeout = 30.0")
    # --timeout wins, then the entry's own timeout, then %config McpMagics.timeout
    assert timeouts == {("plain", ""): 7, ("own", ""): 11, ("plain", "--timeout 3"): 3, ("own", "--timeout 4"): 4}


def test_connect_from_a_variable_takes_its_server_by_name_and_only_the_timeout_from_the_line(
    ip: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--from VAR``: the ``pj.ServerConfig`` a variable holds (an in-memory server here), or NAME's of a dict of
    them; the session takes NAME and ``--timeout``; anything else that describes a server is a mistake."""
    ip.user_ns["mine"] = pj.ServerConfig("built", server=servers_of(ip)["other"].server, timeout=9)
    with ip.run_line_magic("mcp_connect", "held --from mine") as held:
        assert held.name == "held" and held.config.timeout == 9 and held.transport == "memory"
        assert ip.run_line_magic("mcp_call", 'held echo --yes {"text": "from a variable"}').ok
    with ip.run_line_magic("mcp_connect", "auto --from servers --timeout 4") as picked:
        assert picked.config.server is servers_of(ip)["auto"].server and picked.config.timeout == 4
    for line, words in (
        ("%mcp_connect nothere --from servers", "mcp_config_invalid: 'servers' holds no server 'nothere'; it has: "
                                                "demo, auto, other."),
        ("%mcp_connect demo --from servers -- python -m x", "mcp_config_invalid: --from takes the whole server"),
        ("%mcp_connect demo --from servers --url http://127.0.0.1:1/mcp", "mcp_config_invalid: --from takes"),
        ("%mcp_connect demo --from servers --env A=1", "mcp_config_invalid: --from takes the whole server"),
        ("%mcp_connect demo --from sys", "mcp_invalid_arguments: 'sys' must hold a ServerConfig or a dict"),
        ("%mcp_connect demo --from missing", "mcp_invalid_arguments: no variable named 'missing'"),
    ):  # fmt: skip
        assert words in one_line_error(ip, line, capsys), line
    assert pj.sessions() == []


def servers_of(ip: InteractiveShell) -> dict[str, pj.ServerConfig]:
    return ip.user_ns["servers"]  # type: ignore[no-any-return]


def test_a_python_path_with_a_space_stays_one_argument(ip: InteractiveShell, tmp_path: Path) -> None:
    """``{sys.executable}`` expands inside its own word, so a path with spaces is one argument, not three."""
    spaced = tmp_path / "my python env" / "bin" / "python"
    spaced.parent.mkdir(parents=True)
    spaced.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    spaced.chmod(0o755)
    ip.user_ns["spaced_python"] = str(spaced)
    result = ip.run_cell("s = %mcp_connect spaced -- {spaced_python} -m purra_jupyter.demo")
    assert result.success, result.error_in_exec
    session = ip.user_ns["s"]
    try:
        assert session.state == "ready" and session.config.command == str(spaced)
        assert list(session.config.args) == ["-m", "purra_jupyter.demo"]
    finally:
        session.close()


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("%mcp_connect", "the following arguments are required: name"),
        ("%mcp_disconnect", "mcp_config_invalid: give a session name or --all"),
        ("%mcp_catalog nosuch", "mcp_session_unknown"),
        ('%mcp_call nosuch echo {"text": ', "mcp_invalid_arguments: the arguments are not valid JSON"),
        ('%mcp_call nosuch echo {"text": 1,}', "line 1, column 12"),
        ("%mcp_call nosuch echo [1]", "must be a JSON object"),
        ("%mcp_call nosuch echo --args missing_variable", "no variable named 'missing_variable'"),
        ("%mcp_connect remote --url http://example.org/mcp", "mcp_config_invalid: Server 'remote': http://"),
        ("%mcp_connect x --header A=b -- python", "mcp_config_invalid"),
        ("%mcp_connect x --env NOVALUE -- python", "mcp_config_invalid: --env takes KEY=VALUE"),
        ("%mcp_connect x", "mcp_config_invalid: Give the server"),
        ("%mcp_connect x --url http://127.0.0.1:9/mcp -- python", "mcp_config_invalid: Give either --url or a command"),
        ("%mcp_connect x --scope s -- python", "mcp_config_invalid: --scope and --client-id go with --oauth."),
        ("%mcp_connect x --config mcp.json -- python", "mcp_config_invalid: --config takes the server from the file"),
        ('%mcp_call nosuch echo --args a {"text": "x"}', "mcp_invalid_arguments: give --args or JSON arguments, not"),
        ('%%mcp_call nosuch echo {"text": "x"}\n{"text": "y"}', "in the cell body or on the line, not both."),
        ("%mcp_bind nosuch echo --write", "mcp_config_invalid: a --write binding needs --scope-validator VARIABLE"),
        ("%mcp_bind nosuch echo --scope-validator v --allow-any-scope", "--scope-validator or --allow-any-scope, not"),
        ("%mcp_connect broken -- /nonexistent/mcp-server", "mcp_connect_failed: Could not start"),
    ],
)
def test_errors_are_one_line_with_their_code(
    ip: InteractiveShell, capsys: pytest.CaptureFixture[str], cell: str, expected: str
) -> None:
    assert expected in one_line_error(ip, cell, capsys)
    assert pj.sessions() == []


def test_what_a_line_names_must_be_there_and_of_its_kind(
    ip: InteractiveShell, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"only": {"command": sys.executable}}}))
    text = one_line_error(ip, f"%mcp_connect other --config {path}", capsys)
    assert text.endswith(f"mcp_config_invalid: {path} has no server 'other'; it has: only."), text
    ip.user_ns.update(number=1, rows=[])
    text = one_line_error(ip, "%mcp_bind nosuch echo --write --scope-validator number", capsys)
    assert text.endswith("mcp_config_invalid: 'number' must hold a scope validator function."), text
    text = one_line_error(ip, "%mcp_evaluate nosuch echo --rows rows --check number", capsys)
    assert text.endswith("mcp_invalid_arguments: 'number' must hold a function of a result."), text
    assert pj.sessions() == []


def test_a_bad_json_cell_names_line_and_column(ip: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    text = one_line_error(ip, '%%mcp_call nosuch echo\n{\n  "text": "x",\n}', capsys)
    assert "at line 3, column 1" in text


def test_connect_shows_the_status_line_and_one_line_about_the_catalog(
    ip: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    session = ip.run_line_magic("mcp_connect", DEMO)
    try:
        shown = capsys.readouterr().out.splitlines()  # a terminal shell prints each display's text/plain
        assert shown[0].startswith("ready · session: demo · transport: memory: DemoServer in this process")
        assert shown[1:3] == [f"{INSTRUCTIONS_LABEL}:", session.instructions]  # the server's words, as text
        assert (
            shown[3] == f"demo: 13 tools, 12 callable under PurrA, digest {session.catalog.digest[:12]} — "
            "%mcp_catalog demo shows the tools"
        )
        assert len(shown) == 4  # not the whole catalog
    finally:
        session.close()


def test_the_kernels_own_python_is_shown_as_python_not_as_its_path(
    ip: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    """``{sys.executable}`` runs this interpreter, whose path is one machine's (a home, a checkout, a venv): what the
    connect prints, the session's info, its status and its log show ``python`` instead."""
    capsys.readouterr()
    session = ip.run_line_magic("mcp_connect", STDIO_DEMO)
    try:
        shown = [capsys.readouterr().out, session._repr_mimebundle_()["text/html"], session.status_widget().value]
        shown += [str(session.log.to_frame())]
        for text in shown:
            assert "stdio: python -m purra_jupyter.demo" in text or "stdio python -m purra_jupyter.demo" in text, text
            assert sys.executable not in text and sys.prefix not in text, text
    finally:
        session.close()


def test_evaluate_runs_a_batch_from_a_variable(
    ip: InteractiveShell, demo: pj.McpSession, capsys: pytest.CaptureFixture[str]
) -> None:
    ip.user_ns["rows"] = [{"a": 1, "b": 2}, {"a": 5, "b": 6}, {"a": "x", "b": 1}]
    ip.user_ns["small"] = lambda result: result.structured["sum"] < 10 or "too big"
    frame = ip.run_line_magic("mcp_evaluate", "demo add --rows rows --check small --yes")
    assert frame["error_code"].fillna("ok").tolist() == ["ok", "ok", "mcp_invalid_arguments"]
    assert frame["passed"].tolist() == [True, False, False]
    pending = ip.run_line_magic("mcp_evaluate", "demo add --rows rows")
    assert isinstance(pending, PendingCall) and pending.state == "pending"
    pending.deny()
    assert "no variable named 'nothing'" in one_line_error(ip, "%mcp_evaluate demo add --rows nothing", capsys)
    ip.user_ns["text"] = "not rows"
    assert "must hold a DataFrame or a list" in one_line_error(ip, "%mcp_evaluate demo add --rows text", capsys)
    text = one_line_error(ip, "%mcp_evaluate demo add --rows rows --concurrency 4 --yes", capsys)
    assert text.startswith("McpSessionError: "), text


def test_runtime_failures_are_session_errors_in_magic_words(
    ip: InteractiveShell, demo: pj.McpSession, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(pj.McpSessionError, match="mcp_binding_missing"):
        ip.run_line_magic("mcp_call", "demo no_such_tool --yes {}")
    text = one_line_error(ip, f"%mcp_connect demo --env MODE=other -- {STDIO_DEMO.split(' -- ')[1]}", capsys)
    assert text.startswith("McpSessionError: mcp_session_exists") and "another server configuration" in text, text
    assert "--replace" in text and "%mcp_disconnect demo" in text, text
    text = one_line_error(ip, '%mcp_call demo greet {"name": "Ada"}', capsys)
    assert text.startswith("McpSessionError: mcp_schema_unsupported") and "Explore it with --raw" in text


def test_a_rerun_connect_reuses_the_open_session_and_replace_connects_anew(
    ip: InteractiveShell, demo: pj.McpSession, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    again = ip.run_line_magic("mcp_connect", DEMO)
    assert again is demo and demo.state == "ready"
    assert "reusing the open session 'demo' (same server, ready)" in capsys.readouterr().out
    changed = ip.run_line_magic("mcp_connect", DEMO.replace(" --", " --timeout 7 --approval auto --", 1))
    assert changed is demo and demo.config.timeout == 7 and demo.approval == "auto"
    assert "timeout now 7 s, approval policy now 'auto'" in capsys.readouterr().out
    with pytest.raises(pj.McpSessionError, match="mcp_digest_mismatch"):
        ip.run_line_magic("mcp_connect", DEMO.replace(" --", f" --expect-digest {'0' * 64} --", 1))
    replaced = ip.run_line_magic("mcp_connect", DEMO.replace(" --", " --replace --", 1))
    try:
        assert replaced is not demo and replaced.state == "ready" and demo.state == "closed"
        assert demo.cause == "replaced with %mcp_connect --replace"
        assert pj.sessions() == [replaced]
    finally:
        replaced.close()


def test_config_views_turns_tools_views_on_for_new_sessions_and_a_rerun_still_reuses(
    ip: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    """Outside a kernel a session decides views are off; ``%config McpMagics.views = True`` turns them on (the
    extension advertised, list_notes' call shows its view), and a rerun of the same line takes that session."""
    off = ip.run_line_magic("mcp_connect", DEMO)
    try:
        assert off.config.views is False
        assert ip.run_line_magic("mcp_connect", DEMO) is off  # the session's decided views are its config's
    finally:
        off.close()
    ip.run_line_magic("config", "McpMagics.views = True")
    try:
        on = ip.run_line_magic("mcp_connect", DEMO)
        try:
            assert on.config.views
            capsys.readouterr()
            assert ip.run_line_magic("mcp_connect", DEMO) is on
            assert "reusing the open session 'demo'" in capsys.readouterr().out
            call = ip.run_line_magic("mcp_call", "demo list_notes --yes")
            assert call.state == "done" and call.view.view is not None
            assert call.view.view.uri == "ui://demo/notes.html"
        finally:
            on.close()
    finally:
        ip.run_line_magic("config", "McpMagics.views = None")


def test_config_changes_apply_to_open_sessions_and_say_so(
    ip: InteractiveShell, demo: pj.McpSession, capsys: pytest.CaptureFixture[str]
) -> None:
    demo.bind("sleep")
    capsys.readouterr()
    ip.run_line_magic("config", 'McpMagics.approval = "auto"')
    try:
        assert "approval policy 'auto' applies to new sessions and to the open ones: demo." in capsys.readouterr().out
        envelope = ip.run_line_magic("mcp_call", 'demo echo {"text": "no widget"}')
        assert isinstance(envelope, Envelope) and envelope.ok, envelope
        assert any("'auto'" in entry.detail for entry in demo.log.events("setting"))
    finally:
        ip.run_line_magic("config", 'McpMagics.approval = "prompt"')
    assert demo.approval == "prompt"
    ip.run_line_magic("config", "McpMagics.timeout = 1")
    try:
        assert "timeout 1 s applies to new sessions and to the open ones: demo." in capsys.readouterr().out
        assert demo.call("sleep", {"seconds": 5}, approve=True).error_code == "mcp_timeout"
    finally:
        ip.run_line_magic("config", "McpMagics.timeout = 30")
    assert demo.config.timeout == 30


def test_disconnect_confirms_and_a_closed_name_says_closed_not_unknown(
    ip: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    ip.run_line_magic("config", 'McpMagics.approval = "prompt"')
    ip.run_line_magic("mcp_connect", DEMO)
    capsys.readouterr()
    ip.run_line_magic("mcp_disconnect", "demo")
    assert capsys.readouterr().out == "Closed session 'demo'.\n"
    for cell in ("%mcp_catalog demo", "%mcp_disconnect demo", '%mcp_call demo echo --yes {"text": "x"}'):
        text = one_line_error(ip, cell, capsys)
        assert "mcp_connection_closed: Session 'demo' is closed (closed with %mcp_disconnect)" in text, text
    assert "mcp_session_unknown" in one_line_error(ip, "%mcp_catalog never_opened", capsys)
    # The name is free again: a new session takes it, and is the one the magics find.
    session = ip.run_line_magic("mcp_connect", DEMO)
    assert ip.run_line_magic("mcp_catalog", "demo") is session.catalog
    ip.run_line_magic("mcp_connect", DEMO.replace("demo", "other", 1))
    capsys.readouterr()
    ip.run_line_magic("mcp_disconnect", "--all")
    assert capsys.readouterr().out == "Closed 2 sessions: demo, other.\n"
    ip.run_line_magic("mcp_disconnect", "--all")
    assert capsys.readouterr().out == "No open sessions to close.\n"


def test_sessions_with_none_open_says_so(ip: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    assert pj.sessions() == []
    capsys.readouterr()
    assert ip.run_line_magic("mcp_sessions", "") is None
    assert capsys.readouterr().out.startswith("No open sessions. Open one with %mcp_connect")


def test_resources_and_prompts_magics_show_what_the_server_offers(
    ip: InteractiveShell, demo: pj.McpSession, capsys: pytest.CaptureFixture[str]
) -> None:
    from purra_jupyter._beside.offerings import Offerings, PromptMessages, ResourceContents
    from purra_jupyter._ui.offering_forms import OfferingForm

    both = ip.run_line_magic("mcp_resources", "demo")
    assert [len(listing) for listing in both] == [9, 1]
    html = both._repr_mimebundle_()["text/html"]
    assert "9 resources" in html and "1 resource template" in html and "demo://documents/{id}" in html
    prompts = ip.run_line_magic("mcp_prompts", "demo")
    assert isinstance(prompts, Offerings) and prompts.keys() == ["summarize"]
    read = ip.run_line_magic("mcp_read", "demo demo://documents/doc-3")
    assert isinstance(read, ResourceContents) and read.text.startswith("# Tool schemas in MCP")
    filled = ip.run_line_magic("mcp_read", 'demo demo://documents/{id} {"id": "doc-4"}')  # never expanded
    assert isinstance(filled, ResourceContents) and filled.uri == "demo://documents/doc-4"
    form = ip.run_line_magic("mcp_read", "demo demo://documents/{id}")
    assert isinstance(form, OfferingForm) and list(form.fields) == ["id"] and form.completes
    got = ip.run_line_magic("mcp_prompt", 'demo summarize {"id": "doc-1"}')
    assert isinstance(got, PromptMessages) and got.text == ["Summarize in one line:"]
    asked = ip.run_line_magic("mcp_prompt", "demo summarize")  # arguments and no JSON: its form
    assert isinstance(asked, OfferingForm) and asked.button.description == "Get prompt"
    text = one_line_error(ip, "%mcp_prompt demo nosuch", capsys)
    assert text.startswith("McpSessionError: mcp_offering_unknown: Server 'demo' lists no prompt 'nosuch'"), text
    text = one_line_error(ip, '%mcp_read demo demo://documents/{id} {"id": "doc-1", "x": "1"}', capsys)
    assert text.startswith("UsageError: mcp_invalid_arguments:") and "no variable 'x'" in text, text
    text = one_line_error(ip, "%mcp_read demo demo://documents/doc-99", capsys)
    assert text.startswith("McpSessionError: mcp_protocol_error:"), text
    text = one_line_error(ip, '%mcp_prompt demo summarize {"id": 1}', capsys)
    assert text.startswith("UsageError: mcp_invalid_arguments:"), text
    text = one_line_error(ip, "%mcp_read demo", capsys)
    assert text.startswith("UsageError:"), text
    assert "%mcp_read NAME URI_TEMPLATE" in ip.run_line_magic("mcp_read", "--help").text
    assert "%mcp_prompt NAME PROMPT" in ip.run_line_magic("mcp_prompt", "demo --help").text


def test_a_line_that_misses_its_session_says_what_to_type_and_a_near_name_is_offered(
    ip: InteractiveShell, demo: pj.McpSession, capsys: pytest.CaptureFixture[str]
) -> None:
    """``%mcp_catalog`` with no name says the line it takes and the sessions open; a name one typo away from an open
    session's is offered; a magic without a session says its line alone."""
    text = one_line_error(ip, "%mcp_catalog", capsys)
    assert text == (
        "UsageError: the following arguments are required: name. "
        "Type %mcp_catalog NAME [--refresh] (NAME: a session; the open sessions: demo)"
    ), text
    text = one_line_error(ip, "%mcp_catalog dmeo", capsys)
    assert text == (
        "McpSessionError: mcp_session_unknown: No session named 'dmeo'. Did you mean 'demo'? Open one with "
        "%mcp_connect."
    ), text
    assert "Did you mean" not in one_line_error(ip, "%mcp_catalog elsewhere", capsys)
    demo.close()
    text = one_line_error(ip, "%mcp_log", capsys)
    assert text.endswith("(NAME: a session; none is open: %mcp_connect NAME -- COMMAND)"), text
