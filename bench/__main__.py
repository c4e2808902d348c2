"""``python -m bench [--quick] [SCENARIO ...]``: run the scenarios, then print a summary table."""

from __future__ import annotations

import argparse
import compileall
import os
import sys
import time
import traceback
from collections.abc import Callable
from types import ModuleType

from . import (
    apartness,
    batch_concurrency,
    batch_memory,
    batch_pool,
    call_overhead,
    discovery,
    first_connect,
    imports,
    instructions,
    memory,
)
from .common import Result, report, summary_table

SCENARIOS: dict[str, ModuleType] = {
    "first_connect": first_connect,
    "call_overhead": call_overhead,
    "discovery": discovery,
    "batch_concurrency": batch_concurrency,
    "batch_pool": batch_pool,
    "batch_memory": batch_memory,
    "import": imports,
    "memory": memory,
    "instructions": instructions,
    "apartness": apartness,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run, not a measurement")
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO", help=f"any of: {', '.join(SCENARIOS)}")
    options = parser.parse_args(argv)
    unknown = [name for name in options.scenarios if not any(name in known for known in SCENARIOS)]
    if unknown:
        parser.error(f"no scenario matches {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}")
    picked = [f for f in options.scenarios if f not in SCENARIOS]  # (an exact name picks that one alone: memory)
    chosen = [name for name in SCENARIOS if not options.scenarios or name in options.scenarios
              or any(f in name for f in picked)]  # fmt: skip
    # The servers and the memory workers are started as `python -m ...`: run from the repository root.
    os.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    mode = "quick (smoke sizes, numbers mean little)" if options.quick else "full"
    print(f"bench: {mode}; {os.cpu_count()} cores; python {sys.version.split()[0]}", flush=True)
    # pip byte-compiled the SDK when it installed it; the kit's editable sources are compiled here the same way,
    # or a machine with PYTHONDONTWRITEBYTECODE (this one) would compile them again in every fresh interpreter.
    compileall.compile_dir("purra_jupyter", quiet=1)
    results = []
    for name in chosen:
        print(f"\n== {name}", flush=True)
        started = time.perf_counter()
        result = guarded(name, SCENARIOS[name].run, options.quick)
        report(result)
        print(f"  ({time.perf_counter() - started:.1f} s)", flush=True)
        results.append(result)
    summary_table(results)
    return 1 if any(result.error for result in results) else 0


def guarded(name: str, run: Callable[[bool], Result], quick: bool) -> Result:
    """A scenario that crashes still prints its JSON line (with ``error``); the others still run."""
    try:
        return run(quick)
    except Exception as exc:
        traceback.print_exc()
        return Result(name, "", None, "", None, error=f"{exc.__class__.__name__}: {exc}"[:500])


if __name__ == "__main__":
    sys.exit(main())
