"""``memory``: RSS growth of a session holding a 256-tool catalog, after 1,000 calls and 1,000 more.

Each side runs in a fresh interpreter (``python -m bench.memory kit|raw CALLS``) so nothing else this
run allocated is counted. A short warm-up session first pays for lazy imports and first-use caches;
the baseline is taken after it. The session is one stdio session to the hand-written 256-tool server
(``tools/call`` of its ``tool_000`` stands in for ``echo``, so one session holds both the big catalog
and the calls). The kit keeps a bounded log (two rows per call, at most 10,000), so a little growth
over the calls is expected; the target compares the second block of calls with the raw SDK's.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from .common import Result, call_request, hosted_raw_client, raw_server_args

MIB = 1024 * 1024
TOOLS = 256
TARGET_SLACK_MIB = 1.0
TARGET = f"2nd block growth <= raw + {TARGET_SLACK_MIB:g} MiB"
ARGUMENTS = {"x": "hi"}


def rss_mib() -> float:
    import psutil

    gc.collect()
    return psutil.Process().memory_info().rss / MIB


def kit_worker(calls: int) -> dict[str, float]:
    import purra_jupyter as pj

    def config(tools: int) -> Any:
        return pj.ServerConfig(f"memory-{tools}", command=sys.executable, args=raw_server_args(tools, 10))

    def call(session: Any) -> None:
        assert session.call("tool_000", ARGUMENTS, approve=True).ok

    with pj.connect(config(4)) as warm:
        for _ in range(20):
            call(warm)
    return _phases(lambda: pj.connect(config(TOOLS)), lambda s: len(s.catalog), call, lambda s: s.close(), calls)


def raw_worker(calls: int) -> dict[str, float]:
    from mcp import types

    def listing(state: tuple[Any, Any]) -> list[Any]:
        portal, client = state
        pages = [portal.call(client.list_tools)]
        while pages[-1].nextCursor is not None:
            pages.append(portal.call(client.list_tools, pages[-1].nextCursor))
        return pages

    def call(state: tuple[Any, Any]) -> None:
        portal, client = state
        result = portal.call(client.send_request, call_request("tool_000", dict(ARGUMENTS)), types.CallToolResult)
        assert not result.isError

    with hosted_raw_client(raw_server_args(4, 10)) as warm:
        listing(warm)
        for _ in range(20):
            call(warm)
    held: list[Any] = []  # the raw client keeps its listing, as the kit keeps its catalog

    def open_raw() -> Any:
        context = hosted_raw_client(raw_server_args(TOOLS, 10))
        state = context.__enter__()
        held.append(context)
        return state

    def hold_listing(state: Any) -> int:
        held.append(listing(state))
        return sum(len(page.tools) for page in held[-1])

    return _phases(open_raw, hold_listing, call, lambda _: held[0].__exit__(None, None, None), calls)


def _phases(
    open_session: Callable[[], Any],
    catalog_size: Callable[[Any], int],
    call: Callable[[Any], None],
    close: Callable[[Any], None],
    calls: int,
) -> dict[str, float]:
    """RSS at the baseline, after connecting (catalog held), after ``calls`` calls and ``calls`` more."""
    base = rss_mib()
    session = open_session()
    assert catalog_size(session) == TOOLS
    connected = rss_mib()
    for _ in range(calls):
        call(session)
    first = rss_mib()
    for _ in range(calls):
        call(session)
    second = rss_mib()
    close(session)
    return {"base": base, "connect": connected - base, "calls_1": first - connected, "calls_2": second - first}


def measure(side: str, calls: int) -> dict[str, float]:
    command = [sys.executable, "-m", "bench.memory", side, str(calls)]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(quick: bool) -> Result:
    """One fresh interpreter per side; growth in MiB per phase."""
    calls = 20 if quick else 1000
    raw, kit = measure("raw", calls), measure("kit", calls)
    met = kit["calls_2"] <= raw["calls_2"] + TARGET_SLACK_MIB

    def line(name: str, found: dict[str, float]) -> str:
        return (
            f"{name}: baseline {found['base']:.1f} MiB; +{found['connect']:.2f} after connect (256-tool catalog), "
            f"+{found['calls_1']:.2f} after {calls} calls, +{found['calls_2']:.2f} after {calls} more"
        )

    extra = {"calls": calls, "tools": TOOLS}
    for name, found in (("raw", raw), ("kit", kit)):
        extra |= {f"{name}_{key}_mib": value for key, value in found.items()}
    return Result(
        scenario="memory",
        metric="MiB growth over the 2nd block of calls",
        ratio=None,
        target=TARGET,
        target_met=met,
        human=[line("raw SDK", raw), line("kit", kit)],
        summary=f"kit +{kit['calls_2']:.2f} MiB, raw +{raw['calls_2']:.2f} MiB",
        extra=extra,
    )


if __name__ == "__main__":
    worker = {"kit": kit_worker, "raw": raw_worker}[sys.argv[1]]
    print(json.dumps(worker(int(sys.argv[2]))))
