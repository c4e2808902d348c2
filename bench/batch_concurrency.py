"""``batch_concurrency``: ``s.evaluate`` of a 20 ms server-side sleep at concurrency 8 vs 1.

The headline is the kit's batch time at concurrency 8 against the raw SDK's (an anyio task group with the same
number of concurrent ``send_request`` calls, on its own portal): what the kit adds to what the transport and the
server allow on this machine. The speed-ups time(c=1) / time(c=8) of both are reported beside it. Each batch
is timed whole; the batches rotate per round.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import anyio

from .common import DEMO_ARGS, Result, call_request, hosted_raw_client, median, meets, rotated, time_once

TARGET = "<= 1.1"
CONCURRENCY = 8
METRIC = f"kit/raw task group at c={CONCURRENCY}"


async def raw_batch(client: Any, rows: list[dict[str, Any]], concurrency: int) -> int:
    """``rows`` as ``tools/call sleep`` requests, at most ``concurrency`` in flight; returns the count ok."""
    from mcp import types

    limiter = anyio.Semaphore(concurrency)
    ok = 0

    async def one(arguments: dict[str, Any]) -> None:
        nonlocal ok
        async with limiter:
            result = await client.send_request(call_request("sleep", arguments), types.CallToolResult)
        ok += not result.isError

    async with anyio.create_task_group() as group:
        for arguments in rows:
            group.start_soon(one, dict(arguments))
    return ok


def run(quick: bool) -> Result:
    """Rotate kit c=1, kit c=8, raw c=1, raw c=8 batches per round; compare medians."""
    import purra_jupyter as pj

    count, seconds, rounds = (16, 0.005, 1) if quick else (200, 0.02, 2)
    rows = [{"seconds": seconds}] * count
    config = pj.ServerConfig("bench-batch", command=sys.executable, args=DEMO_ARGS)
    with pj.connect(config) as session, hosted_raw_client(DEMO_ARGS) as (portal, client):
        session.bind("sleep", concurrency_safe=True)

        def kit(concurrency: int) -> None:
            frame = session.evaluate("sleep", rows, approve=True, concurrency=concurrency)
            assert len(frame) == count and bool(frame["ok"].all()), frame

        def raw(concurrency: int) -> None:
            assert portal.call(raw_batch, client, rows, concurrency) == count

        batches: dict[str, Callable[[], None]] = {
            "raw_c1": lambda: raw(1),
            "raw_cn": lambda: raw(CONCURRENCY),
            "kit_c1": lambda: kit(1),
            "kit_cn": lambda: kit(CONCURRENCY),
        }
        raw(CONCURRENCY)  # warm-up
        kit(CONCURRENCY)
        samples: dict[str, list[float]] = {name: [] for name in batches}
        for index in range(rounds):
            for name in rotated(list(batches), index):
                samples[name].append(time_once(batches[name]))
    ms = {name: median(values) for name, values in samples.items()}
    raw_speedup = ms["raw_c1"] / ms["raw_cn"]
    human = [
        f"{count} calls of sleep({seconds * 1000:g} ms), {rounds} rounds; medians of whole batches",
        f"raw SDK reference: c=1 {ms['raw_c1']:.0f} ms, c={CONCURRENCY} {ms['raw_cn']:.0f} ms, "
        f"speed-up {raw_speedup:.2f}",
    ]
    extra: dict[str, Any] = {
        "calls": count,
        "sleep_ms": seconds * 1000,
        "concurrency": CONCURRENCY,
        "raw_c1_ms": ms["raw_c1"],
        "raw_speedup": raw_speedup,
    }
    speedup = ms["kit_c1"] / ms["kit_cn"]
    human.append(f"kit: c=1 {ms['kit_c1']:.0f} ms, c={CONCURRENCY} {ms['kit_cn']:.0f} ms, speed-up {speedup:.2f}")
    extra |= {"kit_c1_ms": ms["kit_c1"], "kit_vs_raw_at_concurrency": ms["kit_cn"] / ms["raw_cn"]}
    ratio = ms["kit_cn"] / ms["raw_cn"]
    extra["kit_speedup"] = speedup
    return Result(
        "batch_concurrency", METRIC, ratio, TARGET, meets(ratio, TARGET), ms["raw_cn"], ms["kit_cn"], human, extra,
        summary=f"{ratio:.3f} (speed-up kit {speedup:.2f}, raw {raw_speedup:.2f})",
    )  # fmt: skip
