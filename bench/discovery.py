"""``discovery``: connect + catalog with verdicts (kit) vs initialize + paged ``tools/list`` (raw SDK).

Both sides start the server process, list every page and end the process, so process start counts on
both. The raw side runs on its own portal, driven from the main thread like the kit's (see
``call_overhead``). One sample is one whole discovery; the sides alternate, one each per round.
"""

from __future__ import annotations

import sys
from typing import Any

from .common import Result, median, raw_client, raw_server_args, rotated, time_once

TARGET = "<= 1.5"


async def raw_discover(args: list[str]) -> int:
    """What a client without the kit does to learn a server's tools; returns how many it found."""
    async with raw_client(args) as client:
        tools = []
        cursor = None
        while True:
            page = await client.list_tools(cursor)
            tools.extend(page.tools)
            cursor = page.nextCursor
            if cursor is None:
                return len(tools)


def run(quick: bool) -> Result:
    """Alternate one raw and one kit discovery per round; compare medians."""
    from anyio.from_thread import start_blocking_portal

    import purra_jupyter as pj
    from purra_jupyter._connection.purra_adapter import clear_contract_cache
    from purra_jupyter._purra.catalog import digest_of

    tools, rounds = (32, 1) if quick else (256, 15)
    args = raw_server_args(tools, 10)
    config = pj.ServerConfig("bench-discovery", command=sys.executable, args=args)

    catalogs: list[Any] = []

    def kit() -> int:
        # As for a server never seen: every distinct schema's contract is built afresh.
        clear_contract_cache()
        with pj.connect(config) as session:
            catalogs.append(session.catalog)
            return len(session.catalog)

    samples: dict[str, list[float]] = {"raw": [], "kit": [], "digest": []}
    with start_blocking_portal() as portal:

        def raw() -> int:
            return portal.call(raw_discover, args)

        sides = {"raw": raw, "kit": kit}
        for side in sides.values():  # warm-up: first-use imports and caches on both sides
            assert side() == tools
        for index in range(rounds):
            for name in rotated(list(sides), index):
                samples[name].append(time_once(sides[name]))
            # The catalog digest is computed on first use (pinning, display): timed apart, reported too.
            samples["digest"].append(time_once(lambda: digest_of(catalogs[-1].tools)))
    raw_ms, kit_ms, digest_ms = median(samples["raw"]), median(samples["kit"]), median(samples["digest"])
    pages = -(-tools // 10)
    return Result.kit_over_raw(
        "discovery",
        "kit/raw median",
        raw_ms,
        kit_ms,
        TARGET,
        human=[
            f"{tools} tools in {pages} pages, process start to process end, {rounds} rounds",
            "raw: " + ", ".join(f"{v:.0f}" for v in samples["raw"]) + " ms",
            "kit: " + ", ".join(f"{v:.0f}" for v in samples["kit"]) + f" ms; kit adds {kit_ms - raw_ms:.0f} ms",
            f"the catalog digest on first use: {digest_ms:.1f} ms more, kit/raw {(kit_ms + digest_ms) / raw_ms:.3f}",
        ],
        extra={
            "tools": tools,
            "pages": pages,
            "rounds": rounds,
            "kit_added_ms": kit_ms - raw_ms,
            "digest_median_ms": digest_ms,
            "ratio_with_digest": (kit_ms + digest_ms) / raw_ms,
        },
    )
