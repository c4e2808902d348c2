"""``instructions``: CPU instructions per call and per batch row, counted by valgrind, for raw, floor and kit.

Time on a shared machine moves with its load; an instruction count does not. Each side runs in a fresh interpreter
under ``valgrind --tool=cachegrind --cache-sim=no`` with ``PYTHONHASHSEED=0`` (``python -m bench.instructions SIDE
KIND N``): it connects to the demo server (whose process valgrind does not follow, so the server's work is not
counted), warms up, then makes N more calls (``calls``: sequential ``echo`` calls from the main thread, as a cell
makes them) or one batch of N rows (``rows``: concurrency 1). The count of a run with N = 0 is subtracted from a run
with N = ``COUNT``, so connecting, importing and warming up cancel out and what is left is per call:

- ``raw``: the raw SDK's ``send_request`` on its own blocking portal (calls), an anyio task group of rows (rows);
- ``floor``: the same with purra-mcp's registration handler instead of ``send_request`` (the floor of any PurrA
  host: the raw SDK plus purra-mcp);
- ``kit``: ``s.call("echo", ..., approve=True)`` (calls), ``s.evaluate("echo", rows, approve=True)`` (rows).

The kit's own share is kit minus floor. valgrind is installed with apt when it is missing (the bench scripts may do
that); without it the scenario is skipped, saying why.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .common import DEMO_ARGS, Result, call_request, hosted_raw_client

SIDES = ("raw", "floor", "kit")
KINDS = ("calls", "rows")
COUNT = 1_000  # calls (or rows) counted per side and kind: a side's count per call moves by up to 0.03M between
# runs (how often the loop wakes depends on when the answers arrive), a run of 0 by about 1.5M in all
WARMUP = 30
OWN_CALL_TARGET = 0.35e6  # the kit's own instructions per call over the floor
OWN_ROW_TARGET = 0.30e6  # ... and per batch row
TARGET = f"kit - floor <= {OWN_CALL_TARGET / 1e6:g}M per call, <= {OWN_ROW_TARGET / 1e6:g}M per row"
ARGUMENTS = {"text": "hi"}
REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


# --- the worker: one side, in a fresh interpreter under valgrind ------------------------------------------


def worker(side: str, kind: str, count: int) -> None:
    rows = [dict(ARGUMENTS) for _ in range(count)]
    warm = [dict(ARGUMENTS) for _ in range(WARMUP)]
    if side == "kit":
        _kit(kind, warm, rows)
    else:
        _raw(side, kind, warm, rows)


def _kit(kind: str, warm: list[dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    import purra_jupyter as pj

    config = pj.ServerConfig("bench-instructions", command=sys.executable, args=DEMO_ARGS, timeout=120)
    with pj.connect(config) as session:
        session.bind("echo")

        def calls(arguments: list[dict[str, Any]]) -> None:
            for one in arguments:
                assert session.call("echo", one, approve=True).ok

        def batch(arguments: list[dict[str, Any]]) -> None:
            if arguments:
                assert bool(session.evaluate("echo", arguments, approve=True)["ok"].all())

        calls(warm)
        batch(warm)
        (calls if kind == "calls" else batch)(rows)


def _raw(side: str, kind: str, warm: list[dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    from mcp import types
    from purra.contracts.tools import ExecutionState
    from purra_mcp import McpToolLimits

    from purra_jupyter._purra.bindings import call_limits

    from .batch_pool import floor_send, purra_handlers, raw_send, task_group_batch

    limits = call_limits(McpToolLimits(timeout_ms=120_000))
    with hosted_raw_client(DEMO_ARGS) as (portal, client):
        handler = portal.call(purra_handlers, [client], limits)[0]

        def one(arguments: dict[str, Any]) -> bool:
            if side == "raw":
                request = call_request("echo", arguments)
                return not portal.call(client.send_request, request, types.CallToolResult).isError
            return portal.call(handler, ExecutionState(), arguments).error_code is None

        def calls(arguments: list[dict[str, Any]]) -> None:
            for row in arguments:
                assert one(row)

        send = raw_send([client]) if side == "raw" else floor_send([handler])

        def batch(arguments: list[dict[str, Any]]) -> None:
            assert portal.call(task_group_batch, send, 1, arguments, 1) == len(arguments)

        calls(warm)
        batch(warm)
        (calls if kind == "calls" else batch)(rows)


# --- the scenario: nine workers, differences -----------------------------------------------------------


def valgrind() -> str | None:
    """valgrind's path, installing it with apt when it is missing and apt is there (as root)."""
    if shutil.which("valgrind") is None and shutil.which("apt-get") is not None and os.geteuid() == 0:
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        subprocess.run(["apt-get", "update"], check=False, **quiet)  # type: ignore[call-overload]
        subprocess.run(["apt-get", "install", "-y", "valgrind"], check=False, **quiet)  # type: ignore[call-overload]
    return shutil.which("valgrind")


def counted(tool: str, side: str, kind: str, count: int) -> int:
    """Instructions of one worker run (the whole process, not its server)."""
    command = [tool, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
               sys.executable, "-m", "bench.instructions", side, kind, str(count)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    found = REFS.findall(done.stderr)
    if done.returncode != 0 or not found:
        raise RuntimeError(f"{side} {kind} {count}: exit {done.returncode}: {done.stderr[-2000:]}")
    return int(found[-1].replace(",", ""))


def run(quick: bool) -> Result:
    if quick:  # (nine processes under valgrind take minutes: a smoke run checks that each side's worker works)
        for side in SIDES:
            subprocess.run([sys.executable, "-m", "bench.instructions", side, "rows", "2"], check=True,
                           capture_output=True)  # fmt: skip
        return Result("instructions", "", None, TARGET, None, summary="quick: the workers ran, nothing counted")
    tool = valgrind()
    if tool is None:
        skipped = "valgrind is not installed (apt-get install valgrind)"
        return Result("instructions", "", None, TARGET, None, skipped=skipped)
    count = 5 if quick else COUNT
    runs = [(side, kind, size) for side in SIDES for kind, size in (("calls", 0), *((kind, count) for kind in KINDS))]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # (valgrind runs one thread at a time)
        counts = dict(zip(runs, pool.map(lambda run: counted(tool, *run), runs), strict=True))
    per = {f"{side}_{kind}": (counts[side, kind, count] - counts[side, "calls", 0]) / count
           for side in SIDES for kind in KINDS}  # fmt: skip
    own_call, own_row = per["kit_calls"] - per["floor_calls"], per["kit_rows"] - per["floor_rows"]
    met = own_call <= OWN_CALL_TARGET and own_row <= OWN_ROW_TARGET
    human = [f"valgrind cachegrind instruction counts, {count} calls (rows) per side after {WARMUP} warm-up, "
             "a run of 0 subtracted; millions of instructions:"]  # fmt: skip
    for kind, unit in (("calls", "per call"), ("rows", "per batch row")):
        raw, floor, kit = (per[f"{side}_{kind}"] / 1e6 for side in SIDES)
        human.append(f"{unit}: raw {raw:.3f}M, floor (raw + purra-mcp's handler) {floor:.3f}M, kit {kit:.3f}M; "
                     f"the kit's own share {kit - floor:.3f}M")  # fmt: skip
    return Result(
        "instructions", "the kit's own instructions over the floor (millions)", None, TARGET, met, human=human,
        extra={**{f"{name}_instructions": round(value) for name, value in per.items()}, "count": count,
               "kit_own_per_call": round(own_call), "kit_own_per_row": round(own_row)},
        summary=f"{own_call / 1e6:.3f}M per call, {own_row / 1e6:.3f}M per row",
    )  # fmt: skip


if __name__ == "__main__":
    side, kind, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    assert side in SIDES and kind in KINDS, sys.argv
    worker(side, kind, count)
    print(json.dumps({"side": side, "kind": kind, "count": count}))
