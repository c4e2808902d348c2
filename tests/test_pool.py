"""Batches that scale: ``pj.evaluate(config, tool, rows, sessions=N)`` spreads one batch over N sessions (N demo
server processes over stdio) behind one approval, with the same frame and summary as one session's ``evaluate``."""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from conftest import decided, demo_config, demo_in_memory, wait_until

import purra_jupyter as pj
from purra_jupyter._base.wire import CONFIG_INVALID, DIGEST_MISMATCH, NOT_CONCURRENCY_SAFE

ROWS = [{"text": f"row {i}"} for i in range(30)]
RESULTS = ["ok", "error_code", "effect_state", "text", "structured", "message"]  # (elapsed_ms aside)


def counts(session: pj.McpSession) -> dict[str, Any]:
    """What the session's own server process finished, per tool, and the most it had in flight at once."""
    return dict(session.call("call_counts", {}, raw=True, approve=True).structured_content)


def test_pj_evaluate_over_three_processes_equals_one_sessions_frame() -> None:
    spread = pj.evaluate(demo_config("pool"), "echo", ROWS, sessions=3, concurrency=2, approve=True)
    assert pj.sessions() == []  # decided in code: every session closed
    with pj.connect(demo_config("one")) as one:
        one.bind("echo")
        single = one.evaluate("echo", ROWS, approve=True)
    assert spread[RESULTS].equals(single[RESULTS]) and spread["text"].tolist() == [row["text"] for row in ROWS]
    summary = spread.attrs["summary"]
    assert summary.sessions == 3 and summary.rows == len(ROWS) and summary.counts == {"ok": len(ROWS)}
    assert "concurrency 2 on each of 3 sessions" in repr(summary)


def test_the_rows_go_to_every_session_in_turn_at_most_concurrency_on_each() -> None:
    with ExitStack() as opened:
        a, b, c = (opened.enter_context(pj.connect(demo_in_memory(name))) for name in "abc")
        for session in (a, b, c):
            session.bind("sleep", concurrency_safe=True)
        rows = [{"seconds": 0.05}] * 12
        frame = a.evaluate("sleep", rows, approve=True, concurrency=2, also_on=[b, c])
        assert frame["ok"].all()
        for session in (a, b, c):
            said = counts(session)
            assert said["counts"]["sleep"] == 4 and 1 <= said["max_in_flight"] <= 2, (session.name, said)
        approvals = [row.detail for row in a.log.events("approval")]
        assert any("12 rows" in detail for detail in approvals)  # the one approval, in the first session's log
        assert not any("rows" in row.detail for row in b.log.events("approval"))


def test_one_approval_by_a_click_covers_every_session() -> None:
    pending = pj.evaluate(demo_config("clicked"), "echo", ROWS[:6], sessions=2)
    try:
        assert pending.state == "pending" and [s.name for s in pj.sessions()] == ["clicked", "clicked-2"]
        assert "on each of 2 sessions" in dict(pending.job.detail_rows)["batch"]
        frame = decided(pending, "approve")
        assert frame["ok"].all() and frame.attrs["summary"].sessions == 2
        wait_until(lambda: pj.sessions() == [], what="the batch's own sessions to close once it settled")
    finally:
        for session in pj.sessions():
            session.close()


@pytest.mark.parametrize(
    ("options", "code", "words"),
    [
        ({"sessions": 0}, CONFIG_INVALID, "sessions must be an integer from 1 to 16"),
        ({"sessions": 2, "raw": True}, CONFIG_INVALID, "raw=True calls run one at a time on one session"),
    ],
)
def test_pj_evaluate_refuses_what_it_cannot_spread(options: dict[str, Any], code: str, words: str) -> None:
    with pytest.raises(pj.McpSessionError) as raised:
        pj.evaluate(demo_config("refused"), "echo", ROWS, approve=True, **options)
    assert raised.value.code == code and words in raised.value.message
    assert pj.sessions() == []


def test_also_on_needs_the_same_catalog_and_a_concurrency_safe_binding_on_each() -> None:
    with pj.connect(demo_in_memory("a")) as a, pj.connect(demo_in_memory("b")) as b:
        a.bind("echo", concurrency_safe=True)
        b.bind("echo")
        with pytest.raises(pj.McpSessionError) as raised:
            a.evaluate("echo", ROWS, approve=True, also_on=[b])
        assert raised.value.code == NOT_CONCURRENCY_SAFE and "on each of 2 sessions" in raised.value.message
        b.call("toggle_extra_tool", {}, approve=True)
        b.refresh()
        with pytest.raises(pj.McpSessionError) as raised:
            a.evaluate("echo", ROWS, approve=True, also_on=[b])
        assert raised.value.code == DIGEST_MISMATCH
        with pytest.raises(pj.McpSessionError, match="also_on must hold other open sessions"):
            a.evaluate("echo", ROWS, approve=True, also_on=[a])


# Run in a process of its own: dask's worker processes leave Python's multiprocessing resource tracker running as a
# child of the process that started them, which other tests here (no server process left behind) would count.
DASK_RUN = """
import json, sys
import pandas as pd
import purra_jupyter as pj
from distributed import Client, LocalCluster

if __name__ == "__main__":
    demo = lambda name: pj.ServerConfig(name, command=sys.executable, args=["-m", "purra_jupyter.demo"])
    rows = pd.DataFrame({"text": [f"row {i}" for i in range(25)]}, index=[f"r{i}" for i in range(25)])
    check = lambda envelope: bool(envelope.text) or "no text"  # (cloudpickle sends it by value)
    single = pj.evaluate(demo("single"), "echo", rows, approve=True, check=check)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \\
            Client(cluster) as client:
        sharded = pj.evaluate(demo("sharded"), "echo", rows, approve=True, check=check, shards=3, engine=client)
        workers = len(set(client.run(lambda: __import__("os").getpid()).values()))
    one, many = single.attrs["summary"], sharded.attrs["summary"]
    print(json.dumps({
        "index": sharded.index.tolist(), "columns_same": list(sharded.columns) == list(single.columns),
        "equal": sharded.drop(columns="elapsed_ms").equals(single.drop(columns="elapsed_ms")),
        "summaries": [[s.rows, s.counts, s.passed, s.sessions, len(s.latencies_ms)] for s in (one, many)],
        "workers": workers, "open": len(pj.sessions()),
    }))
"""


@pytest.mark.timeout(300)  # a hang guard: a two-worker cluster starting, and two evaluations
def test_shards_on_a_two_worker_local_cluster_equal_one_process(tmp_path: Path) -> None:
    """The same evaluation split into 3 shards, run by dask.distributed on a LocalCluster of two worker processes
    (each shard with its own demo server process): the frame equals the one-process frame, row for row."""
    script = tmp_path / "shards.py"
    script.write_text(DASK_RUN)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    said = json.loads(run.stdout.strip().splitlines()[-1])
    assert said["index"] == [f"r{i}" for i in range(25)] and said["columns_same"] and said["equal"], said
    assert said["summaries"] == [[25, {"ok": 25}, 25, 1, 25], [25, {"ok": 25}, 25, 3, 25]], said
    assert said["workers"] == 2 and said["open"] == 0


def test_shards_need_an_engine_and_an_approval_in_code() -> None:
    with pytest.raises(pj.McpSessionError, match="shards > 1 needs an engine"):
        pj.evaluate(demo_config("x"), "echo", ROWS, shards=2, approve=True)
    with pytest.raises(pj.McpSessionError, match="approve it in code"):
        pj.evaluate(demo_config("x"), "echo", ROWS, shards=2, engine=object())  # type: ignore[arg-type]
    assert pj.sessions() == []
