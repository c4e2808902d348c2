"""``batch_concurrency``: ``s.evaluate`` of a 20 ms server-side sleep at concurrency 8 vs 1.

The headline is the kit's batch time at concurrency 8 against the floor: the same rows sent by an anyio task group
through purra-mcp's registration handler on a raw SDK session (its own portal), what any PurrA host pays with
nothing of the kit. The raw SDK's task group (``send_request``) is measured too; floor/raw is reported without a
target, as purra-mcp's own share. The speed-ups time(c=1) / time(c=8) of each are reported beside it. Each batch is
timed whole; the batches rotate per round.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from .batch_pool import floor_send, purra_handlers, raw_send, task_group_batch
from .common import DEMO_ARGS, Result, hosted_raw_client, median, meets, rotated, time_once

TARGET = "<= 1.1"
CONCURRENCY = 8
METRIC = f"kit/floor (raw SDK + purra-mcp's handler) task group at c={CONCURRENCY}"


def run(quick: bool) -> Result:
    """Rotate the kit's, the floor's and the raw SDK's batches at c=1 and c=8 per round; compare medians."""
    import purra_jupyter as pj
    from purra_jupyter._purra.bindings import call_limits

    count, seconds, rounds = (16, 0.005, 1) if quick else (200, 0.02, 2)
    rows = [{"seconds": seconds}] * count
    config = pj.ServerConfig("bench-batch", command=sys.executable, args=DEMO_ARGS)
    with pj.connect(config) as session, hosted_raw_client(DEMO_ARGS) as (portal, client):
        session.bind("sleep", concurrency_safe=True)
        handler = portal.call(purra_handlers, [client], call_limits(session.limits), "sleep")[0]

        def kit(concurrency: int) -> None:
            frame = session.evaluate("sleep", rows, approve=True, concurrency=concurrency)
            assert len(frame) == count and bool(frame["ok"].all()), frame

        def group(send: Any, concurrency: int) -> None:
            assert portal.call(task_group_batch, send, 1, rows, concurrency) == count

        sends = {"raw": raw_send([client], "sleep"), "floor": floor_send([handler])}
        batches: dict[str, Callable[[], None]] = {"kit_c1": lambda: kit(1), "kit_cn": lambda: kit(CONCURRENCY)}
        for side, send in sends.items():
            batches[f"{side}_c1"] = lambda send=send: group(send, 1)  # type: ignore[misc]
            batches[f"{side}_cn"] = lambda send=send: group(send, CONCURRENCY)  # type: ignore[misc]
        for warm in ("raw_cn", "floor_cn", "kit_cn"):
            batches[warm]()
        samples: dict[str, list[float]] = {name: [] for name in batches}
        for index in range(rounds):
            for name in rotated(list(batches), index):
                samples[name].append(time_once(batches[name]))
    ms = {name: median(values) for name, values in samples.items()}
    speedups = {side: ms[f"{side}_c1"] / ms[f"{side}_cn"] for side in ("raw", "floor", "kit")}
    ratio = ms["kit_cn"] / ms["floor_cn"]
    human = [f"{count} calls of sleep({seconds * 1000:g} ms), {rounds} rounds; medians of whole batches"]
    for side, words in (
        ("raw", "raw SDK task group"),
        ("floor", "floor (raw SDK + purra-mcp's handler)"),
        ("kit", "kit"),
    ):
        human.append(f"{words}: c=1 {ms[f'{side}_c1']:.0f} ms, c={CONCURRENCY} {ms[f'{side}_cn']:.0f} ms, "
                     f"speed-up {speedups[side]:.2f}")  # fmt: skip
    human.append(
        f"at c={CONCURRENCY}: kit/floor {ratio:.3f}, floor/raw {ms['floor_cn'] / ms['raw_cn']:.3f} (no target)"
    )
    extra: dict[str, Any] = {
        "calls": count,
        "sleep_ms": seconds * 1000,
        "concurrency": CONCURRENCY,
        **{f"{name}_ms": value for name, value in ms.items()},
        **{f"{side}_speedup": value for side, value in speedups.items()},
        "floor_over_raw_at_concurrency": ms["floor_cn"] / ms["raw_cn"],
        "kit_vs_raw_at_concurrency": ms["kit_cn"] / ms["raw_cn"],
    }
    return Result(
        "batch_concurrency", METRIC, ratio, TARGET, meets(ratio, TARGET), ms["floor_cn"], ms["kit_cn"], human, extra,
        summary=f"{ratio:.3f} (floor/raw {ms['floor_cn'] / ms['raw_cn']:.3f}; speed-up kit {speedups['kit']:.2f}, "
        f"floor {speedups['floor']:.2f})",
    )  # fmt: skip
