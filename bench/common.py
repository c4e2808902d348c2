"""What every scenario shares: the servers, a raw SDK session hosted like the kit's, timing, reporting."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp import ClientSession

ROOT = Path(__file__).resolve().parent.parent
RAW_SERVER = ROOT / "tests" / "servers" / "raw_server.py"
DEMO_ARGS = ["-m", "purra_jupyter.demo"]


def raw_server_args(tools: int, page_size: int) -> list[str]:
    """Arguments of the hand-written JSON-RPC test server (``tools/list`` pages of ``page_size``)."""
    return [str(RAW_SERVER), "--tools", str(tools), "--page-size", str(page_size)]


@asynccontextmanager
async def raw_client(args: list[str]) -> AsyncIterator[ClientSession]:
    """The raw SDK the way its README shows it: ``stdio_client`` + ``ClientSession`` + ``initialize``.

    The server's stderr goes to /dev/null (the kit reads it through a pipe thread; that is kit cost)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=args)
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            yield client


@contextmanager
def hosted_raw_client(args: list[str]) -> Iterator[tuple[Any, ClientSession]]:
    """A raw SDK session on its own blocking portal (a loop thread), driven from the main thread.

    This is the arrangement the kit must use in a notebook (DESIGN.md §4), so comparing against it
    measures what the kit adds, not the cost of the thread hop both sides pay."""
    from anyio.from_thread import start_blocking_portal

    with start_blocking_portal() as portal, portal.wrap_async_context_manager(raw_client(args)) as client:
        yield portal, client


async def purra_handler_on(client: ClientSession, server_id: str, tool: str, monitor: Any, limits: Any) -> Any:
    """purra-mcp's registration handler of ``tool`` (a read binding) made by ``discover_mcp_tools`` on
    ``client``: the handler every PurrA call of the kit runs, the floor any PurrA host pays per call."""
    from purra.contracts import ToolPolicy
    from purra_mcp import McpToolBinding, discover_mcp_tools

    binding = McpToolBinding(tool, ToolPolicy(mode="read", title=tool, risk_level="read"), None)
    found = await discover_mcp_tools(client, server_id, {tool: binding}, monitor=monitor, limits=limits)
    return found.registrations[0].handler


def call_request(tool: str, arguments: dict[str, Any]) -> Any:
    """A ``tools/call`` request as ``ClientSession.send_request`` takes it."""
    from mcp import types

    params = types.CallToolRequestParams(name=tool, arguments=arguments)
    return types.ClientRequest(types.CallToolRequest(params=params))


def time_each(func: Callable[[], object], count: int) -> list[float]:
    """Milliseconds of each of ``count`` sequential calls of ``func``."""
    out = []
    for _ in range(count):
        started = time.perf_counter()
        func()
        out.append((time.perf_counter() - started) * 1000)
    return out


def time_once(func: Callable[[], object]) -> float:
    return time_each(func, 1)[0]


def rotated(items: list[Any], round_index: int) -> list[Any]:
    """``items`` rotated by the round number, so no side always runs first (or right after the other)."""
    shift = round_index % len(items)
    return items[shift:] + items[:shift]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


@dataclass
class Result:
    """One scenario's outcome: a headline ``ratio`` checked against ``target``, plus details."""

    scenario: str
    metric: str
    ratio: float | None
    target: str
    target_met: bool | None
    raw_median_ms: float | None = None
    kit_median_ms: float | None = None
    human: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    skipped: str | None = None
    error: str | None = None
    summary: str | None = None  # the summary table's value cell, when the ratio alone does not say it

    @classmethod
    def kit_over_raw(
        cls, scenario: str, metric: str, raw_ms: float, kit_ms: float, target: str, human: list[str], extra: dict
    ) -> Result:
        """The usual headline: kit median / raw median, checked against ``target``."""
        ratio = kit_ms / raw_ms
        return cls(scenario, metric, ratio, target, meets(ratio, target), raw_ms, kit_ms, human, extra)

    def to_json(self) -> dict[str, Any]:
        def rounded(value: Any) -> Any:
            return round(value, 4) if isinstance(value, float) else value

        data = {
            "scenario": self.scenario,
            "metric": self.metric,
            "raw_median_ms": rounded(self.raw_median_ms),
            "kit_median_ms": rounded(self.kit_median_ms),
            "ratio": rounded(self.ratio),
            "target": self.target,
            "target_met": self.target_met,
            "skipped": self.skipped,
            "error": self.error,
            **{key: rounded(value) for key, value in self.extra.items()},
            "cores": os.cpu_count(),
            "date": date.today().isoformat(),
            "python": sys.version.split()[0],
            "mcp": mcp_version(),
        }
        return data


def meets(value: float, target: str) -> bool:
    """``value`` against a target written as ``"<= 1.15"`` or ``">= 6"``."""
    op, number = target.split()
    return value <= float(number) if op == "<=" else value >= float(number)


def report(result: Result) -> None:
    """The human lines, then the one JSON line of the scenario."""
    for line in result.human:
        print(f"  {line}")
    if result.error:
        print(f"{result.scenario}: error: {result.error}")
    elif result.skipped:
        print(f"{result.scenario}: skipped: {result.skipped}")
    else:
        print(
            f"{result.scenario}: raw {fmt_ms(result.raw_median_ms)}, kit {fmt_ms(result.kit_median_ms)}, "
            f"{result.metric} {value_of(result)} (target {result.target}: {verdict_of(result)})"
        )
    print(json.dumps(result.to_json()), flush=True)


def fmt_ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f} ms"


def value_of(result: Result) -> str:
    if result.summary is not None:
        return result.summary
    return "n/a" if result.ratio is None else f"{result.ratio:.3f}"


def verdict_of(result: Result) -> str:
    if result.error:
        return "ERROR"
    if result.skipped:
        return "skipped"
    return {True: "met", False: "MISSED", None: "-"}[result.target_met]


def summary_table(results: list[Result]) -> None:
    """One row per scenario: medians, the headline value, the target and whether it was met."""
    rows = [("scenario", "raw median", "kit median", "value", "target", "result")]
    rows += [
        (r.scenario, fmt_ms(r.raw_median_ms), fmt_ms(r.kit_median_ms), value_of(r), r.target, verdict_of(r))
        for r in results
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    print(f"\nsummary ({os.cpu_count()} cores, {date.today().isoformat()}, mcp {mcp_version()})")
    for row in rows:
        print("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def mcp_version() -> str:
    from importlib.metadata import version

    return version("mcp")
