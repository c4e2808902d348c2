"""``batch_pool``: one batch of trivial calls spread over N = 1, 2, 4 demo server processes.

The kit's side is what ``pj.evaluate(config, tool, rows, sessions=N)`` does once its sessions are open: the first
session's ``evaluate`` with the others ``also_on``, the rows spread over all N in turn, ``CONCURRENCY`` at once on
each. The raw side is the raw SDK doing the same: N sessions to N processes on one portal, an anyio task group
sending the rows in turn with the same limit per session. Connecting is not timed (both sides hold their N sessions
open). The headline is the worst of the three ratios kit/raw; each N's ratio and calls per second are reported.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import anyio

from .common import DEMO_ARGS, Result, call_request, median, meets, raw_client, rotated, time_once

TARGET = "<= 1.1"
SIZES = (1, 2, 4)
CONCURRENCY = 4
METRIC = f"worst kit/raw task group over N = {', '.join(map(str, SIZES))} processes (c={CONCURRENCY} each)"


async def raw_batch(clients: list[Any], rows: list[dict[str, Any]], concurrency: int) -> int:
    """``rows`` as ``tools/call echo`` requests, row i on client i mod N, at most ``concurrency`` in flight on each."""
    from mcp import types

    limiters = [anyio.Semaphore(concurrency) for _ in clients]
    ok = 0

    async def one(index: int, arguments: dict[str, Any]) -> None:
        nonlocal ok
        async with limiters[index % len(clients)]:
            request = call_request("echo", arguments)
            result = await clients[index % len(clients)].send_request(request, types.CallToolResult)
        ok += not result.isError

    async with anyio.create_task_group() as group:
        for index, arguments in enumerate(rows):
            group.start_soon(one, index, dict(arguments))
    return ok


def run(quick: bool) -> Result:
    """Per round, each N's kit and raw batches in rotated order; medians per N."""
    from anyio.from_thread import start_blocking_portal

    import purra_jupyter as pj

    count, rounds = (12, 1) if quick else (600, 3)
    rows = [{"text": f"row {i}"} for i in range(count)]
    largest = max(SIZES)
    with ExitStack() as stack:
        kit_sessions = []
        for index in range(largest):
            config = pj.ServerConfig(f"bench-pool-{index + 1}", command=sys.executable, args=DEMO_ARGS)
            session = stack.enter_context(pj.connect(config))
            session.bind("echo", concurrency_safe=True)
            kit_sessions.append(session)
        portal = stack.enter_context(start_blocking_portal())
        raw_clients = [stack.enter_context(portal.wrap_async_context_manager(raw_client(DEMO_ARGS)))
                       for _ in range(largest)]  # fmt: skip

        def kit(size: int) -> None:
            first, *others = kit_sessions[:size]
            frame = first.evaluate("echo", rows, approve=True, concurrency=CONCURRENCY, also_on=others)
            assert len(frame) == count and bool(frame["ok"].all()), frame

        def raw(size: int) -> None:
            assert portal.call(raw_batch, raw_clients[:size], rows, CONCURRENCY) == count

        batches: dict[str, Callable[[], None]] = {}
        for size in SIZES:
            batches[f"kit_{size}"] = lambda size=size: kit(size)  # type: ignore[misc]
            batches[f"raw_{size}"] = lambda size=size: raw(size)  # type: ignore[misc]
        for warm in batches.values():
            warm()
        samples: dict[str, list[float]] = {name: [] for name in batches}
        for index in range(rounds):
            for name in rotated(list(batches), index):
                samples[name].append(time_once(batches[name]))
    ms = {name: median(values) for name, values in samples.items()}
    ratios = {size: ms[f"kit_{size}"] / ms[f"raw_{size}"] for size in SIZES}
    human = [f"{count} calls of echo per batch, {rounds} rounds; medians of whole batches (connecting not timed)"]
    extra: dict[str, Any] = {"calls": count, "concurrency": CONCURRENCY}
    for size in SIZES:
        kit_rate, raw_rate = count / ms[f"kit_{size}"] * 1000, count / ms[f"raw_{size}"] * 1000
        human.append(f"N={size}: raw {ms[f'raw_{size}']:.0f} ms ({raw_rate:.0f} calls/s), "
                     f"kit {ms[f'kit_{size}']:.0f} ms ({kit_rate:.0f} calls/s), ratio {ratios[size]:.3f}")  # fmt: skip
        extra |= {f"ratio_n{size}": ratios[size], f"raw_n{size}_ms": ms[f"raw_{size}"],
                  f"kit_n{size}_ms": ms[f"kit_{size}"]}  # fmt: skip
    worst = max(SIZES, key=lambda size: ratios[size])
    ratio = ratios[worst]
    return Result(
        "batch_pool", METRIC, ratio, TARGET, meets(ratio, TARGET), ms[f"raw_{worst}"], ms[f"kit_{worst}"], human,
        extra, summary=" / ".join(f"N={size} {ratios[size]:.3f}" for size in SIZES),
    )  # fmt: skip
