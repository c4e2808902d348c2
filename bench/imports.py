"""``import``: ``import purra_jupyter`` and ``%load_ext purra_jupyter`` as a fraction of ``import mcp``.

Each measurement is a fresh interpreter (a subprocess) that times only the statement itself, so what
an earlier measurement imported cannot hide a cost. For ``%load_ext`` the interpreter first imports
IPython and creates an ``InteractiveShell`` untimed, since a kernel has both before any cell runs.
Each child also reports whether ``mcp`` got imported by the statement (DESIGN.md §3: neither may import it) and
whether the extension started its warm-up thread, which imports it in the background afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from .common import Result, median, meets, rotated

TARGET = "<= 0.1"

_TIMED = """
import json, sys, time
{setup}
started = time.perf_counter()
{statement}
elapsed = (time.perf_counter() - started) * 1000
import threading
warming = any(thread.name == "purra-jupyter-warm-up" for thread in threading.enumerate())
print(json.dumps({{"ms": elapsed, "mcp_imported": "mcp" in sys.modules and not warming, "warming": warming}}))
"""
_SHELL = """
from traitlets.config import Config
from IPython.core.interactiveshell import InteractiveShell
config = Config()
config.HistoryManager.enabled = False
shell = InteractiveShell.instance(config=config)
"""
CASES = {
    "mcp": ("", "import mcp"),
    "purra_jupyter": ("", "import purra_jupyter"),
    "load_ext": (_SHELL, 'shell.run_line_magic("load_ext", "purra_jupyter")'),
}


def measure(case: str, ipython_dir: str) -> dict[str, object]:
    """One fresh interpreter timing one case."""
    setup, statement = CASES[case]
    env = {**os.environ, "IPYTHONDIR": ipython_dir}
    code = _TIMED.format(setup=setup, statement=statement)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(quick: bool) -> Result:
    """Rotate the three cases over fresh interpreters; compare medians with ``import mcp``."""
    repeats = 1 if quick else 7
    samples: dict[str, list[float]] = {case: [] for case in CASES}
    mcp_imported: dict[str, bool] = {case: False for case in CASES}
    warming = False
    with tempfile.TemporaryDirectory(prefix="bench-ipython-") as ipython_dir:
        if not quick:
            for case in CASES:  # warm the OS file cache and the bytecode caches
                measure(case, ipython_dir)
        for index in range(repeats):
            for case in rotated(list(CASES), index):
                found = measure(case, ipython_dir)
                samples[case].append(float(found["ms"]))  # type: ignore[arg-type]
                mcp_imported[case] |= bool(found["mcp_imported"])
                warming |= case == "load_ext" and bool(found["warming"])
    mcp_ms, pj_ms, ext_ms = (median(samples[case]) for case in CASES)
    importers = [case for case in ("purra_jupyter", "load_ext") if mcp_imported[case]]
    ratio, ext_ratio = pj_ms / mcp_ms, ext_ms / mcp_ms
    met = meets(ratio, TARGET) and meets(ext_ratio, TARGET)
    return Result(
        scenario="import",
        metric="import purra_jupyter / import mcp",
        ratio=ratio,
        target=TARGET,
        target_met=met,
        raw_median_ms=mcp_ms,
        kit_median_ms=pj_ms,
        summary=f"{ratio:.3f} (load_ext {ext_ratio:.3f})",
        human=[
            f"fresh interpreters, {repeats} each; medians",
            f"import mcp {mcp_ms:.0f} ms; import purra_jupyter {pj_ms:.1f} ms ({ratio:.3f}); "
            f"%load_ext purra_jupyter {ext_ms:.1f} ms ({ext_ratio:.3f}); both must be {TARGET}",
            "mcp imported by: "
            + (", ".join(importers) or "neither")
            + ("; %load_ext started the warm-up thread that imports it afterwards" if warming else ""),
        ],
        extra={
            "repeats": repeats,
            "load_ext_median_ms": ext_ms,
            "load_ext_ratio": ext_ratio,
            "import_imports_mcp": mcp_imported["purra_jupyter"],
            "load_ext_imports_mcp": mcp_imported["load_ext"],
            "load_ext_starts_warm_up": warming,
        },
    )
