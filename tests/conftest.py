"""Shared fixtures: real servers on real pipes and real HTTP on 127.0.0.1, waited on with deadlines."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import purra_jupyter as pj

SERVERS = Path(__file__).parent / "servers"
LISTENING = "purra-jupyter demo server listening on "


def wait_until(condition: Callable[[], object], *, timeout: float = 10.0, what: str = "condition") -> object:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def demo_config(name: str = "demo", **kwargs: object) -> pj.ServerConfig:
    return pj.ServerConfig(name, command=sys.executable, args=["-m", "purra_jupyter.demo"], **kwargs)


def raw_config(name: str, *args: str, **kwargs: object) -> pj.ServerConfig:
    return pj.ServerConfig(name, command=sys.executable, args=[str(SERVERS / "raw_server.py"), *args], **kwargs)


def start_demo_http() -> tuple[subprocess.Popen[str], str]:
    """Start the demo server on an ephemeral loopback port; returns the process and its /mcp URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "purra_jupyter.demo", "--http", "127.0.0.1:0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if line.startswith(LISTENING):
            return process, line[len(LISTENING) :].strip()
        if not line and process.poll() is not None:
            break
    process.kill()
    raise AssertionError("the demo HTTP server did not report its URL")


@pytest.fixture(scope="module")
def demo_http_url() -> Iterator[str]:
    process, url = start_demo_http()
    try:
        yield url
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(autouse=True)
def _no_session_left_open() -> Iterator[None]:
    yield
    left = pj.sessions()
    for session in left:
        session.close("test cleanup")
    assert not left, f"a test left sessions open: {left}"
