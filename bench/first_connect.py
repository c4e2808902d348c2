"""``first_connect``: a fresh interpreter's ``%load_ext purra_jupyter`` and first connect to the demo server,
until the session is ``ready``, against its floor.

The floor is the server's own start-up: the same demo server started and initialized by a raw SDK client that
had imported the SDK beforehand (untimed), in a fresh interpreter too. Nothing a client does can beat it. The
kit's time is ``%load_ext`` plus the connect, each timed; between them the person "thinks" for 0 s (the cells
run back to back) or 2 s (a person reading the cell), time the warm-up thread may use and that is not counted.
Each measurement is its own interpreter (IPython's ``InteractiveShell`` made first, untimed, as a kernel has it);
the cases rotate.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from .common import DEMO_ARGS, Result, median, meets, rotated

THINK_SECONDS = (0.0, 2.0)
TARGETS = {0.0: "<= 1.3", 2.0: "<= 1.15"}

_KIT = """
import json, sys, time
from traitlets.config import Config
from IPython.core.interactiveshell import InteractiveShell
config = Config()
config.HistoryManager.enabled = False
shell = InteractiveShell.instance(config=config)
started = time.perf_counter()
shell.run_line_magic("load_ext", "purra_jupyter")
loaded = time.perf_counter()
time.sleep({think})
resumed = time.perf_counter()
import purra_jupyter as pj
session = pj.connect(pj.ServerConfig("demo", command=sys.executable, args={args!r}))
ready = time.perf_counter()
assert session.state == "ready", session.state
session.close()
print(json.dumps({{"ms": ((loaded - started) + (ready - resumed)) * 1000}}))
"""
_FLOOR = """
import json, os, sys, time
import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def first() -> float:
    params = StdioServerParameters(command=sys.executable, args={args!r})
    with open(os.devnull, "w") as errlog:
        started = time.perf_counter()
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            return (time.perf_counter() - started) * 1000

print(json.dumps({{"ms": anyio.run(first)}}))
"""


def measure(code: str, ipython_dir: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "IPYTHONDIR": ipython_dir},
        check=True,
        timeout=120,
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1])["ms"])


def run(quick: bool) -> Result:
    """Rotate the floor and the two think times over fresh interpreters; each against the floor's median."""
    repeats = 1 if quick else 9  # fresh interpreters vary by ±20% here: 9 steady the medians
    cases = {"floor": _FLOOR.format(args=DEMO_ARGS)}
    cases |= {f"think_{think:g}": _KIT.format(think=think, args=DEMO_ARGS) for think in THINK_SECONDS}
    samples: dict[str, list[float]] = {name: [] for name in cases}
    with tempfile.TemporaryDirectory(prefix="bench-ipython-") as ipython_dir:
        if not quick:
            for code in cases.values():  # warm the OS file cache and the bytecode caches
                measure(code, ipython_dir)
        for index in range(repeats):
            for name in rotated(list(cases), index):
                samples[name].append(measure(cases[name], ipython_dir))
    ms = {name: median(values) for name, values in samples.items()}
    ratios = {think: ms[f"think_{think:g}"] / ms["floor"] for think in THINK_SECONDS}
    met = {think: meets(ratios[think], TARGETS[think]) for think in THINK_SECONDS}
    return Result(
        scenario="first_connect",
        metric="kit/floor (think 2 s)",
        ratio=ratios[2.0],
        target=TARGETS[2.0],
        target_met=met[2.0] and met[0.0],
        raw_median_ms=ms["floor"],
        kit_median_ms=ms["think_2"],
        summary=f"{ratios[2.0]:.3f} (think 0 s: {ratios[0.0]:.3f}, target {TARGETS[0.0]})",
        human=[
            f"fresh interpreters, {repeats} each; medians",
            f"floor (the demo server started and initialized by the raw SDK, imported before): {ms['floor']:.0f} ms",
            *(
                f"kit, %load_ext + connect after {think:g} s: {ms[f'think_{think:g}']:.0f} ms, "
                f"{ratios[think]:.3f}× the floor (target {TARGETS[think]}: {'met' if met[think] else 'MISSED'})"
                for think in THINK_SECONDS
            ),
        ],
        extra={
            "repeats": repeats,
            "think_0_median_ms": ms["think_0"],
            "think_0_ratio": ratios[0.0],
            "think_0_target": TARGETS[0.0],
            "think_2_ratio": ratios[2.0],
        },
    )
