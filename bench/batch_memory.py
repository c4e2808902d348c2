"""``batch_memory``: the memory a batch of 100,000 rows holds, at its peak and after it, kit and raw SDK.

Each side runs in a fresh interpreter (``python -m bench.batch_memory kit|raw ROWS``) against the demo server over
stdio, ``CONCURRENCY`` calls at once: the kit's ``s.evaluate("echo", rows, approve=True, concurrency=8)``, the raw
SDK's task group sending the same rows. Three figures, as RSS over the interpreter's RSS once connected and warmed
up: the peak while the batch runs (sampled every 10 ms, and the kernel's high-water mark), the batch's result still
held (the kit's DataFrame; the raw side's list of results), and after the result is dropped.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .common import DEMO_ARGS, Result, call_request, hosted_raw_client

MIB = 1024 * 1024
ROWS = 100_000
CONCURRENCY = 8
PEAK_TARGET_MIB = 100.0
AFTER_TARGET_MIB = 20.0
TARGET = f"kit peak <= +{PEAK_TARGET_MIB:g} MiB, after <= +{AFTER_TARGET_MIB:g} MiB"


def rss_mib() -> float:
    import psutil

    return psutil.Process().memory_info().rss / MIB


@contextmanager
def peak_sampler() -> Iterator[Callable[[], float]]:
    """The highest RSS seen every 10 ms while the block runs."""
    highest = [rss_mib()]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.01):
            highest[0] = max(highest[0], rss_mib())

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield lambda: highest[0]
    finally:
        done.set()
        thread.join()


def rows_of(count: int) -> list[dict[str, Any]]:
    return [{"text": f"row {index}"} for index in range(count)]


def kit_worker(count: int) -> dict[str, float]:
    import purra_jupyter as pj

    config = pj.ServerConfig("batch-memory", command=sys.executable, args=DEMO_ARGS, timeout=120)
    with pj.connect(config) as session:
        session.bind("echo", concurrency_safe=True)
        session.evaluate("echo", rows_of(200), approve=True, concurrency=CONCURRENCY)  # warm-up

        def batch(rows: list[dict[str, Any]]) -> Any:
            frame = session.evaluate("echo", rows, approve=True, concurrency=CONCURRENCY)
            assert bool(frame["ok"].all()), frame
            return frame

        return _phases(batch, count)


def raw_worker(count: int) -> dict[str, float]:
    import anyio
    from mcp import types

    with hosted_raw_client(DEMO_ARGS) as (portal, client):

        async def send_all(rows: list[dict[str, Any]]) -> list[Any]:
            results: list[Any] = [None] * len(rows)
            limiter = anyio.Semaphore(CONCURRENCY)

            async def one(index: int) -> None:
                async with limiter:
                    request = call_request("echo", rows[index])
                    results[index] = await client.send_request(request, types.CallToolResult)

            async with anyio.create_task_group() as group:
                for index in range(len(rows)):
                    group.start_soon(one, index)
            return results

        portal.call(send_all, rows_of(200))
        return _phases(lambda rows: portal.call(send_all, rows), count)


def _phases(batch: Callable[[list[dict[str, Any]]], Any], count: int) -> dict[str, float]:
    rows = rows_of(count)
    gc.collect()
    start = rss_mib()
    started = time.perf_counter()
    with peak_sampler() as peak:
        held = batch(rows)
    seconds = time.perf_counter() - started
    gc.collect()
    with_result = rss_mib()
    del held
    gc.collect()
    after = rss_mib()
    return {"start_mib": start, "peak_mib": peak() - start, "held_mib": with_result - start,
            "after_mib": after - start, "seconds": seconds}  # fmt: skip


def measured(side: str, count: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.batch_memory", side, str(count)], capture_output=True, text=True, check=True
    )
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def run(quick: bool) -> Result:
    count = 300 if quick else ROWS
    kit, raw = measured("kit", count), measured("raw", count)
    human = [f"{count} rows of echo at concurrency {CONCURRENCY}, RSS over the connected interpreter's (MiB):"]
    for name, figures in (("raw SDK task group", raw), ("kit evaluate", kit)):
        human.append(f"{name}: peak +{figures['peak_mib']:.1f}, result held +{figures['held_mib']:.1f}, after "
                     f"+{figures['after_mib']:.1f} ({figures['seconds']:.1f} s)")  # fmt: skip
    met = kit["peak_mib"] <= PEAK_TARGET_MIB and kit["after_mib"] <= AFTER_TARGET_MIB
    return Result(
        "batch_memory", "kit RSS over its start: peak, after (MiB)", None, TARGET, None if quick else met, human=human,
        extra={"rows": count, **{f"kit_{k}": v for k, v in kit.items()}, **{f"raw_{k}": v for k, v in raw.items()}},
        summary=f"peak +{kit['peak_mib']:.1f}, after +{kit['after_mib']:.1f} (raw +{raw['peak_mib']:.1f}, "
        f"+{raw['after_mib']:.1f})",
    )  # fmt: skip


if __name__ == "__main__":
    worker = {"kit": kit_worker, "raw": raw_worker}[sys.argv[1]]
    print(json.dumps(worker(int(sys.argv[2]))))
