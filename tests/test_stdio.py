"""The kit's stdio transport: the server's process starts before the SDK is imported, gets the environment the
SDK would give it, and ends as the SDK ends it (stdin closed, then its process group terminated, then
killed), after a close and after an interrupted connect alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import psutil
import pytest
from conftest import HANG_GUARD, SERVERS, children, interrupt_when, raw_config, stderr_after, wait_until
from mcp.client import stdio as sdk_stdio

import purra_jupyter as pj
from purra_jupyter._transports import stdio as stdio_transport

FIRST_CONNECT = """
import importlib.abc, sys
import psutil

servers_at_sdk_import = []


class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "mcp" and not servers_at_sdk_import:
            servers_at_sdk_import.append(len(psutil.Process().children()))
        return None


sys.meta_path.insert(0, Watch())
import purra_jupyter as pj

session = pj.connect(pj.ServerConfig("demo", command=sys.executable, args=["-m", "purra_jupyter.demo"]))
print(servers_at_sdk_import, session.state, session.call("echo", {"text": "hi"}, approve=True).structured)
session.close()
"""


def test_the_servers_process_runs_before_the_sdk_is_imported() -> None:
    """In a fresh interpreter, when ``import mcp`` begins, the demo server's process is already running."""
    done = subprocess.run([sys.executable, "-c", FIRST_CONNECT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[1] ready {'text': 'hi'}"


SLOW_SDK = """
import importlib.abc, sys, time


class Slow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "mcp":
            time.sleep(3)  # an SDK import slower than the connect's timeout
        return None


sys.meta_path.insert(0, Slow())
import purra_jupyter as pj

session = pj.connect(pj.ServerConfig("raw", command=sys.executable, args=[{server!r}], timeout=2))
print(session.state)
session.close()
"""


def test_the_kits_own_imports_do_not_count_against_the_connect_timeout() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SLOW_SDK.format(server=str(SERVERS / "raw_server.py"))],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ready"


# Writes its environment to stderr as one JSON line, then serves as the raw server.
SHOW_ENVIRONMENT = (
    "import json, os, runpy, sys; print('environment', json.dumps(dict(os.environ)), file=sys.stderr, flush=True); "
    "sys.argv = [{server!r}]; runpy.run_path({server!r}, run_name='__main__')"
)


def test_the_server_gets_the_environment_the_sdk_would_give_it(monkeypatch: pytest.MonkeyPatch) -> None:
    assert stdio_transport.INHERITED_ENV == tuple(sdk_stdio.DEFAULT_INHERITED_ENV_VARS)
    assert stdio_transport.EXIT_SECONDS == sdk_stdio.PROCESS_TERMINATION_TIMEOUT
    monkeypatch.setenv("SHELL", "() { echo a shell function; }")  # never inherited
    monkeypatch.setenv("PURRA_TEST_SECRET", "not inherited")
    code = SHOW_ENVIRONMENT.format(server=str(SERVERS / "raw_server.py"))
    with pj.connect(pj.ServerConfig("env", command=sys.executable, args=["-c", code], env={"GIVEN": "1"})) as session:
        seen = json.loads(stderr_after(session, "environment ", what="the server's environment"))
    seen.pop("LC_CTYPE", None)  # Python's own (PEP 538), set in the server as it starts
    expected = {**sdk_stdio.get_default_environment(), "GIVEN": "1"}
    assert seen == expected
    assert "SHELL" not in seen and "PURRA_TEST_SECRET" not in seen and seen["PATH"] == os.environ["PATH"]


def lingering_pids(session: pj.McpSession) -> list[int]:
    return [int(pid) for pid in stderr_after(session, "raw server: pids ", what="the server's pids").split()]


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_closing_ends_a_server_that_hangs_on_exit_and_what_it_started() -> None:
    """The server ignores its stdin's end and SIGTERM; the child it started does not ignore SIGTERM."""
    session = pj.connect(raw_config("lingering", "--linger"))
    server, child = lingering_pids(session)
    assert session.ping() >= 0
    started = time.monotonic()
    session.close()
    took = time.monotonic() - started
    assert session.state == "closed"
    assert gone(server) and gone(child)  # stdin's end, then SIGTERM, then SIGKILL, each bounded, ended them
    assert took < HANG_GUARD  # a guard against a hang, not a speed claim


def test_an_interrupted_connect_ends_the_server_and_its_child_in_the_background() -> None:
    """The cell gets ``mcp_interrupted`` at once; the server that hangs on exit is ended as a close ends it."""
    before = children()
    config = raw_config("mute", "--fault", "mute", "--linger", timeout=60)
    with interrupt_when(lambda: len(children() - before) == 2, "the server and its child") as sent_at:
        with pytest.raises(pj.McpSessionError) as caught:
            pj.connect(config)
    raised_at = time.monotonic()
    # The cell did not wait for the ending: the server, which ignores its stdin's end and SIGTERM, still runs
    # (only a SIGKILL after both graces ends it).
    assert children() - before, "the server was ended before the cell got its error"
    assert caught.value.code == "mcp_interrupted"
    assert raised_at - sent_at[0] < HANG_GUARD  # a guard against a hang, not a speed claim
    wait_until(lambda: not (children() - before), what="no process left")
    assert pj.sessions() == []
