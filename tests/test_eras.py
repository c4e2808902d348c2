"""Other protocol eras, named: a server of protocol 2026-07-28 only (no ``initialize``), asked ``server/discover`` on
the same connection and refused by name with the versions it lists; a server that negotiates a version the MCP SDK
refuses, refused naming the version it offered and the ones accepted; a server of an older version only (2024-11-05,
2025-03-26: the SDK speaks it, a PurrA host refuses it), opened beside the contract, its tools on the raw path only.
Each against a hand-written server over stdio (and Streamable HTTP), with no wait beyond the connect's timeout."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from conftest import HANG_GUARD, SERVERS, children, raw_config, stop_tree, wait_until

import purra_jupyter as pj
from purra_jupyter._base.errors import KEPT_APART
from purra_jupyter._connection.connection import Connection
from purra_jupyter._connection.seam import accepted_versions
from purra_jupyter._connection.tracking import Deadline
from purra_jupyter._session.opening import transport_for

TIMEOUT = 4.0  # each era server's configured timeout, in seconds
PURRA_MCP = f"purra-mcp {version('purra-mcp')}"
MODERN_ONLY = f"this server speaks only protocol 2026-07-28, which {PURRA_MCP} (and so this kit) cannot"
ACCEPTED = f"This kit accepts only protocol 2025-06-18 and 2025-11-25 ({PURRA_MCP}'s)."


def era_config(*args: str, timeout: float = TIMEOUT) -> pj.ServerConfig:
    return pj.ServerConfig("era", command=sys.executable, args=[str(SERVERS / "era_server.py"), *args], timeout=timeout)


@pytest.fixture
def no_child_left() -> Iterator[None]:
    before = children()
    yield
    wait_until(lambda: not (children() - before), what="no server process left")


def failed_connect(config: pj.ServerConfig) -> tuple[pj.McpSessionError, Connection, float]:
    """What a connect to ``config`` raises, its connection (whose log says what happened) and how long it took."""
    connection = Connection(config, transport_for(config))
    started = time.monotonic()
    with pytest.raises(pj.McpSessionError) as caught:
        connection.open(Deadline(config.timeout, "connecting"))
    return caught.value, connection, time.monotonic() - started


def initialize_rows(connection: Connection) -> list[str]:
    return [row.detail for row in connection.log.events("initialize")]


def test_the_accepted_versions_are_purra_mcps() -> None:
    from purra_mcp import McpCatalogMonitor

    assert accepted_versions() == ("2025-06-18", "2025-11-25")
    for accepted in accepted_versions():
        McpCatalogMonitor().accept_protocol_version(accepted)  # (raises if purra-mcp refused it)


@pytest.mark.parametrize("initialize_error", ["-32022", "-32601"])
def test_a_server_of_2026_07_28_only_is_named_with_the_versions_its_discover_lists(
    initialize_error: str, no_child_left: None
) -> None:
    error, connection, took = failed_connect(
        era_config("--initialize-error", initialize_error, "--versions", "2026-07-28,2027-01-01", "--no-error-data")
    )
    assert took < TIMEOUT + 1  # within the connect's timeout (plus a clock's slack)
    assert error.code == "mcp_protocol_unsupported"
    assert error.message.startswith(f"Server 'era' answered initialize with error {initialize_error}: {MODERN_ONLY}")
    assert "; its server/discover lists 2026-07-28 and 2027-01-01. " in error.message
    assert ACCEPTED in error.message
    assert "\n" not in error.message
    assert KEPT_APART in error.message
    said = "Unsupported protocol version" if initialize_error == "-32022" else "Method not found: initialize"
    assert said in error.server_text  # the server's own words of its refusal: kept apart
    rows = initialize_rows(connection)
    assert rows[0] == f"initialize answered with error {initialize_error}: asking server/discover"
    assert (
        rows[1].startswith("server/discover answered {")
        and '"supportedVersions": ["2026-07-28", "2027-01-01"]' in rows[1]
    )
    assert connection.state == "failed"
    assert connection.cause.startswith("connect failed: mcp_protocol_unsupported")


def test_a_server_of_2026_07_28_that_never_answers_discover_ends_within_the_timeout(no_child_left: None) -> None:
    error, connection, took = failed_connect(era_config("--initialize-error", "-32601", "--discover", "mute"))
    assert took < TIMEOUT + 1  # the discover's wait is half of what is left, so the server's ending fits too
    assert error.code == "mcp_protocol_unsupported"
    assert MODERN_ONLY in error.message
    assert "; server/discover gave no versions. " in error.message
    rows = initialize_rows(connection)
    assert rows[-1].startswith("server/discover not answered within ")
    cancelled = [row.detail for row in connection.log.events("cancel")]
    assert any("(server/discover)" in row for row in cancelled), cancelled  # told the server to stop


def test_the_versions_of_a_2026_07_28_error_are_named_when_discover_gives_none(no_child_left: None) -> None:
    error, connection, _ = failed_connect(era_config("--discover", "error", "--versions", "2026-07-28"))
    assert error.code == "mcp_protocol_unsupported"
    assert MODERN_ONLY in error.message
    assert "; its error lists 2026-07-28. " in error.message  # the -32022's data.supported
    assert initialize_rows(connection)[-1] == "server/discover answered with error -32601"


def test_versions_a_server_lists_are_named_only_as_names_of_versions(no_child_left: None) -> None:
    listed = "2026-07-28,<img src=x onerror=alert(1)>,https://evil.example/x"
    error, _, _ = failed_connect(era_config("--versions", listed))
    assert "; its server/discover lists 2026-07-28 (and 2 other entries). " in error.message
    assert "evil" not in error.message and "<img" not in error.message


def test_a_server_of_2026_07_28_ends_a_connect_with_its_code(no_child_left: None) -> None:
    """Through ``pj.connect``: the code and message a notebook gets, and no session left."""
    with pytest.raises(pj.McpSessionError) as caught:
        pj.connect(era_config())
    assert caught.value.code == "mcp_protocol_unsupported"
    assert MODERN_ONLY in caught.value.message
    assert pj.sessions() == []


def test_a_protocol_version_the_sdk_refuses_is_named_with_the_accepted_ones(no_child_left: None) -> None:
    offered, refuser = "2099-01-01", f"the MCP SDK (mcp {version('mcp')}, and so this kit)"
    started = time.monotonic()
    with pytest.raises(pj.McpSessionError) as caught:
        pj.connect(raw_config("old", "--protocol", offered, timeout=TIMEOUT))
    assert time.monotonic() - started < HANG_GUARD
    assert caught.value.code == "mcp_protocol_unsupported"
    assert (
        caught.value.message == f"Server 'old' offered protocol {offered}, which {refuser} does not accept. {ACCEPTED}"
    )
    assert pj.sessions() == []


def test_a_version_that_is_not_a_versions_name_is_kept_apart(no_child_left: None) -> None:
    offered = "<b>2025-11-25</b> https://evil.example/x"
    with pytest.raises(pj.McpSessionError) as caught:
        pj.connect(raw_config("odd", "--protocol", offered, timeout=TIMEOUT))
    assert caught.value.code == "mcp_protocol_unsupported"
    assert "offered a protocol version that is not a version's name" in caught.value.message
    assert "evil" not in caught.value.message and ACCEPTED in caught.value.message
    assert caught.value.server_text == offered


# --- over Streamable HTTP -------------------------------------------------------------------------------------


@contextmanager
def era_http(*args: str) -> Iterator[pj.ServerConfig]:
    """The era server over Streamable HTTP, as a config of the kit."""
    process = subprocess.Popen(
        [sys.executable, str(SERVERS / "era_server.py"), "--http", *args], stdout=subprocess.PIPE
    )
    assert process.stdout is not None
    line = process.stdout.readline().decode()
    assert line.startswith("listening on http://127.0.0.1:"), line
    try:
        yield pj.ServerConfig("era", url=line.split()[-1], timeout=TIMEOUT)
    finally:
        stop_tree(process, timeout=5)


@pytest.mark.parametrize(
    ("args", "listed"),
    [
        (
            ["--initialize-error", "-32601", "--versions", "2026-07-28,2027-01-01"],
            "server/discover lists 2026-07-28 and 2027-01-01",
        ),
        (["--discover", "mute"], "error lists 2026-07-28"),  # the discover's exchange is dropped at its wait's end
    ],
)
def test_a_server_of_2026_07_28_over_http_is_named_too(args: list[str], listed: str) -> None:
    with era_http(*args) as config:
        error, connection, took = failed_connect(config)
    assert took < TIMEOUT + 1
    assert error.code == "mcp_protocol_unsupported"
    assert MODERN_ONLY in error.message and f"; its {listed}. " in error.message and ACCEPTED in error.message
    assert initialize_rows(connection)[0].endswith(": asking server/discover")


def test_an_http_400_carrying_the_initialize_error_names_the_era() -> None:
    """What 2026-07-28 has a server answer over HTTP to a version it does not speak: HTTP 400 with the -32022 as
    its body. The body is the JSON-RPC error answering initialize, so the era is named as over stdio."""
    with era_http("--http-error-status", "400") as config:
        error, connection, _ = failed_connect(config)
    assert error.code == "mcp_protocol_unsupported"
    assert MODERN_ONLY in error.message and ACCEPTED in error.message
    assert initialize_rows(connection)[0].endswith(": asking server/discover")


# --- older eras, beside the contract ----------------------------------------------------------------------------------

OLDER = ["2024-11-05", "2025-03-26"]


@contextmanager
def older_server(transport: str, protocol: str) -> Iterator[pj.ServerConfig]:
    """The era server speaking only ``protocol`` (an older one), over ``transport``."""
    if transport == "stdio":
        yield era_config("--protocol", protocol)
        return
    with era_http("--protocol", protocol) as config:
        yield config


@pytest.mark.parametrize("protocol", OLDER)
def test_a_purra_host_refuses_the_older_versions(protocol: str) -> None:
    """What the kit says of them is purra-mcp's own decision, and the MCP SDK speaks them."""
    from mcp.shared.version import SUPPORTED_PROTOCOL_VERSIONS
    from purra.errors import CodedAgentCoreError
    from purra_mcp import McpCatalogMonitor

    assert protocol in SUPPORTED_PROTOCOL_VERSIONS and protocol not in accepted_versions()
    with pytest.raises(CodedAgentCoreError) as refused:
        McpCatalogMonitor().accept_protocol_version(protocol)
    assert refused.value.code == "mcp_protocol_unsupported"


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("protocol", OLDER)
def test_an_older_server_opens_beside_the_contract(transport: str, protocol: str, ip: Any) -> None:
    """The session opens; every tool is not callable under PurrA, saying why first; binding one and calling it on the
    PurrA path are refused with ``mcp_protocol_unsupported``; the raw path (a call, a batch, a resource, prompts, the
    server's log lines) works, and the session and its status say which protocol and that PurrA refuses it."""
    refused = f"a PurrA host refuses protocol {protocol}"
    with older_server(transport, protocol) as config, pj.connect(config, approval="auto") as s:
        assert (s.state, s.protocol_version, s.protocol_refused) == ("ready", protocol, refused)
        assert f"protocol {protocol} ({refused}: raw path only)" in repr(s)
        assert f"protocol: {protocol} ({refused}: raw path only)" in s.status_widget().text
        assert f"{refused}: the session opens beside the contract" in "\n".join(initialize_rows(s.connection))

        catalog = ip.run_line_magic("mcp_catalog", "era")
        assert catalog is s.catalog and [tool.name for tool in catalog.tools] == ["echo", "loose"]
        frame = catalog.to_frame()
        assert not frame["callable"].any() and set(frame["refusal"]) == {"mcp_protocol_unsupported"}
        reason = f"protocolVersion: {refused} — explore the tool on the raw path (raw=True, %mcp_call --raw)"
        assert all(tool.reasons[0] == reason for tool in catalog.tools)
        assert catalog["echo"].reasons == (reason,) and catalog["echo"].input_verdict == "compatible"
        assert len(catalog["loose"].reasons) == 2  # its own schema's reason too, for its author
        assert f"Not callable under PurrA: {refused}" in repr(catalog) and "0 callable under PurrA" in repr(catalog)

        beside = (
            f"Server 'era': {refused}, so no tool of it is bound or called under PurrA; use the raw path "
            "(raw=True, %mcp_call --raw)."
        )
        write = {"effect": "write", "scope_validator": pj.allow_any_scope}
        for attempt in (lambda: s.bind("echo"), lambda: s.bind("echo", **write),
                        lambda: s.call("echo", {"x": "a"}, approve=True)):  # fmt: skip
            with pytest.raises(pj.McpSessionError) as caught:
                attempt()
            assert (caught.value.code, caught.value.message) == ("mcp_protocol_unsupported", beside)
        assert s.bindings is None and s.write_bindings is None

        s.set_log_level("info")
        result = s.call("echo", {"x": "hi"}, raw=True)
        assert result.ok and result.content == [{"type": "text", "text": "echo: hi"}], result
        said = [row.detail for row in s.log.events("server_log")]
        assert said == [f"info older: called under protocol {protocol}"], said
        batch = s.evaluate("loose", [{"x": "1"}, {"x": "2"}], raw=True)
        assert list(batch["ok"]) == [True, True], batch
        assert s.read_resource("older://note").contents[0]["text"] == "an older note"
        assert s.prompts.keys() == ["greet"] and s.resources.keys() == ["older://note"]
        assert "Hello you" in repr(s.get_prompt("greet", {"who": "you"}))
        assert s.ping() >= 0 and s.refresh().tools[0].reasons[0] == reason
        assert s.state == "ready"


def test_a_replay_of_an_older_session_judges_its_recording_under_the_same_protocol(tmp_path: Path) -> None:
    """The recorded listing's verdicts carry the protocol's refusal as the live ones do: nothing "changed"."""
    config = era_config("--protocol", "2025-03-26")
    transcript = tmp_path / "older.jsonl"
    with pj.connect(config, record=True) as s:
        assert s.call("echo", {"x": "a"}, raw=True, approve=True).ok
        s.transcript.save(transcript)
    summary = pj.replay(transcript, config, approve=True).attrs["summary"]
    assert "verdicts: unchanged" in repr(summary) and "answers: same 1" in repr(summary), repr(summary)
