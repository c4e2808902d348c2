"""Batches that resume: ``checkpoint=`` keeps each row as it settles; a rerun takes the rows done before and sends
only the rest. Against the demo server in memory, over HTTP, and in a real kernel killed with SIGKILL part-way."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from conftest import HANG_GUARD, demo_in_memory, wait_until

import purra_jupyter as pj
from purra_jupyter._base.wire import CONFIG_INVALID
from purra_jupyter._evaluation.checkpoint import Checkpoint

ROWS = [{"text": f"row {i}"} for i in range(20)] + [{"text": "same"}, {"text": "same"}]  # two rows ask the same


def echo_count(session: pj.McpSession) -> int:
    """How many echo calls the demo server has finished (its own count)."""
    counts = session.call("call_counts", {}, approve=True).structured["counts"]
    return int(counts.get("echo", 0))


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_rerun_takes_the_rows_done_and_sends_only_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "batch.jsonl"
    with pj.connect(demo_in_memory(), approval="auto") as demo:
        demo.bind("echo")
        first = demo.evaluate("echo", ROWS[:10], checkpoint=path)
        assert first.attrs["summary"].resumed == 0 and len(lines(path)) == 10 and echo_count(demo) == 10
        whole = demo.evaluate("echo", ROWS, checkpoint=path)
        summary = whole.attrs["summary"]
        assert echo_count(demo) == len(ROWS) and summary.resumed == 10 and summary.rows == len(ROWS)
        assert whole["text"].tolist() == [row["text"] for row in ROWS] and whole["ok"].all()
        assert whole["elapsed_ms"].notna().all()  # the rows taken from the file ran, before
        assert f"{path}: 10 rows done before, not sent again" in repr(summary)
        keys = [entry["key"] for entry in lines(path)]
        assert len(keys) == len(set(keys)) == len(ROWS)  # the two rows that ask the same are two rows
        again = demo.evaluate("echo", ROWS, checkpoint=path)  # all done: nothing to approve, nothing sent
        assert echo_count(demo) == len(ROWS) and again.attrs["summary"].resumed == len(ROWS)
        assert again["text"].tolist() == whole["text"].tolist()
        raw = demo.evaluate("echo", ROWS[:3], raw=True, approve=True, checkpoint=path)  # the raw path: other calls
        assert raw.attrs["summary"].resumed == 0 and echo_count(demo) == len(ROWS) + 3


def test_the_approval_says_how_many_rows_it_takes_from_the_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "batch.jsonl"
    with pj.connect(demo_in_memory()) as demo:
        demo.bind("echo")
        demo.evaluate("echo", ROWS[:5], approve=True, checkpoint=path)
        pending = demo.evaluate("echo", ROWS, checkpoint=path)
        assert pending.state == "pending"
        assert ("checkpoint", f"{path}: 5 rows done before, not sent again") in pending.job.detail_rows
        assert "17 calls" in dict(pending.job.detail_rows)["batch"]
        pending.approve()
        frame = pending.wait()
        assert frame.attrs["summary"].resumed == 5 and echo_count(demo) == len(ROWS)
        approvals = [row.detail for row in demo.log.events("approval")]
        assert any("5 rows done before" in detail for detail in approvals), approvals


def test_a_catalog_that_changed_sends_the_rows_again(tmp_path: Path) -> None:
    path = tmp_path / "batch.jsonl"
    with pj.connect(demo_in_memory(), approval="auto") as demo:
        demo.bind("echo")
        demo.evaluate("echo", ROWS[:4], checkpoint=path)
        demo.call("toggle_extra_tool", {}, approve=True)
        demo.refresh()
        frame = demo.evaluate("echo", ROWS[:4], checkpoint=path)
        assert frame.attrs["summary"].resumed == 0 and echo_count(demo) == 8


def test_a_line_the_kill_cut_is_dropped_and_a_bad_line_is_skipped_and_named(tmp_path: Path) -> None:
    path = tmp_path / "batch.jsonl"
    with pj.connect(demo_in_memory(), approval="auto") as demo:
        demo.bind("echo")
        demo.evaluate("echo", ROWS[:3], checkpoint=path)
        text = path.read_text()
        path.write_text(text + text.splitlines()[0][:25])  # a fourth line, cut
        assert len(Checkpoint(path).done) == 3 and path.read_text() == text
        frame = demo.evaluate("echo", ROWS[:4], checkpoint=path)
        assert frame.attrs["summary"].resumed == 3 and len(lines(path)) == 4
        path.write_text("not json\n" + text)  # a bad line: skipped, named; the good rows stay done
        checkpoint = Checkpoint(path)
        assert len(checkpoint.done) == 3 and checkpoint.skipped == [(1, "not JSON (expected ident)")]
        frame = demo.evaluate("echo", ROWS[:4], checkpoint=path)
        assert frame.attrs["summary"].resumed == 3
        said = demo.log.events("approval")[-1].detail  # the approval's log row names the line skipped
        assert "1 line skipped, not checkpoint rows" in said and "line 1 (not JSON" in said, said
        path.write_text("not json\n")  # no good row at all: not a checkpoint, left as it is
        with pytest.raises(pj.McpSessionError) as raised:
            demo.evaluate("echo", ROWS[:4], checkpoint=path)
        assert raised.value.code == CONFIG_INVALID and f"{path}, line 1: not a checkpoint row" in raised.value.message


def test_the_magic_takes_a_checkpoint(ip: Any, tmp_path: Path) -> None:
    path = tmp_path / "magic.jsonl"
    demo = ip.run_line_magic("mcp_connect", "ck -- {sys.executable} -m purra_jupyter.demo")
    with demo:
        demo.bind("echo")
        ip.user_ns["rows"] = ROWS
        frame = ip.run_line_magic("mcp_evaluate", f"ck echo --rows rows --yes --checkpoint {path}")
        assert len(lines(path)) == len(ROWS) and frame.attrs["summary"].checkpoint == str(path)


KILLED_ROWS, KILLED_AFTER = 600, 150  # the batch, and the rows in its checkpoint when its kernel is killed
KERNEL_BATCH = """
import purra_jupyter as pj
s = pj.connect(pj.ServerConfig("d", url={url!r}), approval="auto")
s.bind("echo")
frame = s.evaluate("echo", [{{"text": f"row {{i}}"}} for i in range({rows})], checkpoint={path!r})
print("DONE", len(frame), frame.attrs["summary"].resumed, frame["ok"].all(), sep="|")
"""


@pytest.mark.timeout(300)  # a hang guard: two kernels and 600 calls over HTTP
def test_a_batch_in_a_killed_kernel_resumes_every_row_exactly_once(
    kernel: tuple[Any, Any], demo_http_url: str, tmp_path: Path
) -> None:
    """A 600-row batch, its kernel killed (SIGKILL) part-way, rerun in a new kernel with the same checkpoint: the
    final table has every row once, and the server finished at most one echo call beyond the 600 (the one in flight
    when the kernel died: concurrency 1)."""
    manager, client = kernel
    path = tmp_path / "killed.jsonl"
    code = KERNEL_BATCH.format(url=demo_http_url, path=str(path), rows=KILLED_ROWS)
    client.execute(code)
    wait_until(lambda: path.exists() and path.read_text().count("\n") >= KILLED_AFTER, timeout=HANG_GUARD * 4,
               what="rows of the batch in its checkpoint")  # fmt: skip
    os.kill(manager.provisioner.pid, signal.SIGKILL)
    manager.provisioner.process.wait(timeout=HANG_GUARD)
    kept_before = path.read_text().count("\n")
    assert KILLED_AFTER <= kept_before < KILLED_ROWS, kept_before
    manager.restart_kernel(now=True)
    client.wait_for_ready(timeout=HANG_GUARD * 2)
    printed: list[str] = []
    reply = client.execute_interactive(
        code, timeout=HANG_GUARD * 4,
        output_hook=lambda msg: printed.append(msg["content"].get("text", "")) if msg["msg_type"] == "stream" else None,
    )  # fmt: skip
    assert reply["content"]["status"] == "ok", reply["content"]
    [done] = [line for line in "".join(printed).splitlines() if line.startswith("DONE|")]
    _, rows, resumed, all_ok = done.split("|")
    assert rows == str(KILLED_ROWS) and int(resumed) == kept_before and all_ok == "True", done
    keys = [entry["key"] for entry in lines(path)]
    assert len(keys) == len(set(keys)) == KILLED_ROWS
    with pj.connect(pj.ServerConfig("count", url=demo_http_url), approval="auto") as counter:
        assert KILLED_ROWS <= echo_count(counter) <= KILLED_ROWS + 1
