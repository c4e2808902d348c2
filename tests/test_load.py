"""Load: ten stdio sessions used at once, 300 calls each through the kit; no cross-talk, and once they
are closed no descriptor, thread or process is left behind."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from conftest import children, demo_config, open_fds, wait_until

import purra_jupyter as pj

SESSIONS = 10
CALLS = 300  # 3,000 calls in all, interleaved: the spans below prove they ran at once
SLACK = 2  # new descriptors or threads that may legitimately be open at the check (e.g. a pytest internal)


def in_threads(target: Callable[[int], None], count: int) -> None:
    """Run ``target(i)`` for each i in its own thread, all released together; re-raise the first failure."""
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=60)
            target(index)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(index,), name=f"load-{index}") for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=240)
        assert not thread.is_alive(), f"{thread.name} did not finish"
    if errors:
        raise errors[0]


def new_since(fds: set[tuple[int, str]], threads: set[threading.Thread]) -> tuple[list[str], list[str]]:
    """The descriptors and threads open now that were not in the baseline ``fds`` and ``threads`` (what earlier
    tests left, and what ends or closes meanwhile, does not count: only what this test added)."""
    return sorted(target for _, target in open_fds() - fds), sorted(
        thread.name for thread in set(threading.enumerate()) - threads if thread.is_alive()
    )


def echo_count(session: pj.McpSession) -> int:
    """What the server itself counted: proof that each call went to its own server exactly once."""
    result = session.connection.request(lambda client: client.call_tool("call_counts", {}))
    return result.structuredContent["counts"].get("echo", 0)


@pytest.mark.timeout(300)
def test_ten_sessions_with_300_interleaved_calls_each_leave_nothing_behind() -> None:
    """Many sessions on the one background loop: every result is its own call's, and closing them all returns
    descriptors, threads and child processes to what they were."""
    with pj.connect(demo_config("warm-up")) as warm:  # start the loop thread and anything else made once
        assert warm.call("echo", {"text": "warm"}, approve=True).ok
    wait_until(lambda: not children(), what="the warm-up server to end")
    fds, threads = open_fds(), set(threading.enumerate())  # the baseline: this test's own, after the warm-up

    sessions: list[pj.McpSession | None] = [None] * SESSIONS

    def open_session(index: int) -> None:
        sessions[index] = pj.connect(demo_config(f"load-{index}"))

    def close_session(index: int) -> None:
        session = sessions[index]
        if session is not None:
            session.close()

    wrong: list[tuple[str, str, object]] = []
    spans: list[tuple[float, float]] = []

    def call_many(index: int) -> None:
        session = sessions[index]
        assert session is not None
        started = time.monotonic()
        for number in range(CALLS):
            text = f"{session.name}/{number}"
            envelope = session.call("echo", {"text": text}, approve=True)
            if not (envelope.ok and envelope.structured == {"text": text} and envelope.text == [text]
                    and envelope.server == session.name):  # fmt: skip
                wrong.append((session.name, text, envelope))
        spans.append((started, time.monotonic()))

    try:
        in_threads(open_session, SESSIONS)
        assert len(pj.sessions()) == SESSIONS
        assert len(children()) == SESSIONS
        in_threads(call_many, SESSIONS)
        assert wrong == [], wrong[:5]
        assert len(spans) == SESSIONS
        assert max(start for start, _ in spans) < min(end for _, end in spans)  # all ten really ran at once
        for session in sessions:
            assert session is not None and session.state == "ready"
            assert echo_count(session) == CALLS, session.name
            calls = [row for row in session.log.events("call") if row.detail.startswith("echo (purra)")]
            assert len(calls) == CALLS and all(row.detail.endswith(": ok") for row in calls)
    finally:
        in_threads(close_session, SESSIONS)

    assert pj.sessions() == []
    assert all(session is not None and session.state == "closed" for session in sessions)
    wait_until(lambda: not children(), what="every server to end")

    def settled() -> bool:
        new_fds, new_threads = new_since(fds, threads)
        return len(new_fds) <= SLACK and len(new_threads) <= SLACK

    try:
        wait_until(settled, what="the descriptors and threads the sessions opened to close and end")
    except AssertionError:
        new_fds, new_threads = new_since(fds, threads)
        pytest.fail(f"left open after the sessions: descriptors {new_fds}, threads {new_threads}")
