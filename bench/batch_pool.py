"""``batch_pool``: one batch of trivial calls spread over N = 1, 2, 4 demo server processes.

The kit's side is what ``pj.evaluate(config, tool, rows, sessions=N)`` does once its sessions are open: the first
session's ``evaluate`` with the others ``also_on``, the rows spread over all N in turn, ``CONCURRENCY`` at once on
each. The raw side is the raw SDK doing the same: N sessions to N processes on one portal, an anyio task group
sending the rows in turn with the same limit per session. The floor is that task group calling purra-mcp's
registration handler on the same raw sessions instead of ``send_request``: what any PurrA host pays per call, with
nothing of the kit. Connecting is not timed (every side holds its N sessions open). The headline is the worst of
the three ratios kit/floor: no host of purra-mcp can beat its own handler, whose cost over the raw SDK (floor/raw)
is reported without a target; each N's ratios (kit/floor, floor/raw, kit/raw) and calls per second are reported.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from typing import Any

import anyio

from .common import DEMO_ARGS, Result, call_request, median, meets, purra_handler_on, raw_client, rotated, time_once

TARGET = "<= 1.1"
SIZES = (1, 2, 4)
CONCURRENCY = 4
METRIC = f"worst kit/floor task group over N = {', '.join(map(str, SIZES))} processes (c={CONCURRENCY} each)"


Send = Callable[[int, dict[str, Any]], Awaitable[bool]]  # (session index, arguments) -> whether it answered ok


async def task_group_batch(send: Send, sessions: int, rows: list[dict[str, Any]], concurrency: int) -> int:
    """``rows`` sent with ``send``, row i on session i mod N, at most ``concurrency`` in flight on each."""
    limiters = [anyio.Semaphore(concurrency) for _ in range(sessions)]
    ok = 0

    async def one(index: int, arguments: dict[str, Any]) -> None:
        nonlocal ok
        async with limiters[index % sessions]:
            answered = await send(index % sessions, arguments)
        ok += answered  # (not ``ok += await …``: that reads ``ok`` before the wait)

    async with anyio.create_task_group() as group:
        for index, arguments in enumerate(rows):
            group.start_soon(one, index, dict(arguments))
    return ok


def raw_send(clients: list[Any], tool: str = "echo") -> Send:
    """A ``tools/call`` request of ``tool`` on the raw SDK's ``send_request``."""
    from mcp import types

    async def send(index: int, arguments: dict[str, Any]) -> bool:
        result = await clients[index].send_request(call_request(tool, arguments), types.CallToolResult)
        return not result.isError

    return send


def floor_send(handlers: list[Any]) -> Send:
    """purra-mcp's registration handler of ``echo`` (which sends the same request), as a PurrA run calls it."""
    from purra.contracts.tools import ExecutionState

    async def send(index: int, arguments: dict[str, Any]) -> bool:
        result = await handlers[index](ExecutionState(), arguments)
        return result.error_code is None

    return send


async def purra_handlers(clients: list[Any], limits: Any, tool: str = "echo") -> list[Any]:
    """purra-mcp's handler of ``tool`` on each raw session, with a monitor of its own (the catalog does not change
    during the bench). The version is the one ``raw_client``'s initialize agreed on: the SDK offers its latest and
    the demo, on the same SDK, takes it."""
    from mcp import types
    from purra_mcp import McpCatalogMonitor

    handlers = []
    for index, client in enumerate(clients):
        monitor = McpCatalogMonitor()
        monitor.accept_protocol_version(types.LATEST_PROTOCOL_VERSION)
        handlers.append(await purra_handler_on(client, f"bench-floor-{index + 1}", tool, monitor, limits))
    return handlers


def run(quick: bool) -> Result:
    """Per round, each N's kit and raw batches in rotated order; medians per N."""
    from anyio.from_thread import start_blocking_portal

    import purra_jupyter as pj
    from purra_jupyter._purra.bindings import call_limits

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
        handlers = portal.call(purra_handlers, raw_clients, call_limits(kit_sessions[0].limits))

        def kit(size: int) -> None:
            first, *others = kit_sessions[:size]
            frame = first.evaluate("echo", rows, approve=True, concurrency=CONCURRENCY, also_on=others)
            assert len(frame) == count and bool(frame["ok"].all()), frame

        def task_group(send: Send, size: int) -> None:
            assert portal.call(task_group_batch, send, size, rows, CONCURRENCY) == count

        batches: dict[str, Callable[[], None]] = {}
        for size in SIZES:
            batches[f"kit_{size}"] = lambda size=size: kit(size)  # type: ignore[misc]
            batches[f"raw_{size}"] = lambda size=size: task_group(raw_send(raw_clients), size)  # type: ignore[misc]
            batches[f"floor_{size}"] = lambda size=size: task_group(floor_send(handlers), size)  # type: ignore[misc]
        for warm in batches.values():
            warm()
        samples: dict[str, list[float]] = {name: [] for name in batches}
        for index in range(rounds):
            for name in rotated(list(batches), index):
                samples[name].append(time_once(batches[name]))
    ms = {name: median(values) for name, values in samples.items()}
    ratios = {size: ms[f"kit_{size}"] / ms[f"floor_{size}"] for size in SIZES}
    floors = {size: ms[f"floor_{size}"] / ms[f"raw_{size}"] for size in SIZES}
    human = [f"{count} calls of echo per batch, {rounds} rounds; medians of whole batches (connecting not timed)"]
    extra: dict[str, Any] = {"calls": count, "concurrency": CONCURRENCY}
    for size in SIZES:
        raw, floor, kit_ms = (ms[f"{side}_{size}"] for side in ("raw", "floor", "kit"))
        human.append(
            f"N={size}: raw {raw:.0f} ms ({count / raw * 1000:.0f} calls/s), raw + purra-mcp's handler (the floor) "
            f"{floor:.0f} ms ({count / floor * 1000:.0f} calls/s), kit {kit_ms:.0f} ms ({count / kit_ms * 1000:.0f} "
            f"calls/s); kit/floor {ratios[size]:.3f}, floor/raw {floors[size]:.3f} (no target), kit/raw "
            f"{kit_ms / raw:.3f}"
        )
        extra |= {
            f"kit_over_floor_n{size}": ratios[size],
            f"floor_ratio_n{size}": floors[size],
            f"kit_over_raw_n{size}": kit_ms / raw,
            f"raw_n{size}_ms": raw,
            f"floor_n{size}_ms": floor,
            f"kit_n{size}_ms": kit_ms,
        }
    worst = max(SIZES, key=lambda size: ratios[size])
    ratio = ratios[worst]
    return Result(
        "batch_pool", METRIC, ratio, TARGET, meets(ratio, TARGET), ms[f"floor_{worst}"], ms[f"kit_{worst}"], human,
        extra, summary=" / ".join(f"N={size} {ratios[size]:.3f} (floor {floors[size]:.3f})" for size in SIZES),
    )  # fmt: skip
