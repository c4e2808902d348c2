"""``bench/`` still runs: a smoke run at tiny sizes prints one JSON line per scenario.

Behaviour only; the timings and ratios of a smoke run mean nothing and are never asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
SCENARIOS = {
    "first_connect", "call_overhead", "discovery", "batch_concurrency", "batch_pool", "batch_memory", "import",
    "memory", "instructions", "apartness",
}  # fmt: skip
KEYS = {
    "scenario",
    "metric",
    "raw_median_ms",
    "kit_median_ms",
    "ratio",
    "target",
    "target_met",
    "skipped",
    "error",
    "cores",
    "date",
}


def bench(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.timeout(300)  # a hang guard: every scenario's quick run (over a minute on a busy machine)
@pytest.mark.xdist_group("views-trick")  # not beside the tricky views: a dozen processes (see test_views.py)
def test_quick_run_prints_one_json_line_per_scenario() -> None:
    out = bench("--quick", timeout=270)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert sorted(line["scenario"] for line in lines) == sorted(SCENARIOS)
    for line in lines:
        assert KEYS <= set(line), line
        assert line["error"] is None, line
        assert line["ratio"] is None or isinstance(line["ratio"], float), line
        assert line["target_met"] in (True, False, None), line
        assert isinstance(line["cores"], int) and len(line["date"]) == 10, line
    assert "summary" in out.stdout


def test_an_unknown_scenario_is_a_usage_error() -> None:
    out = bench("no_such_scenario", timeout=60)
    assert out.returncode == 2
    assert "no scenario matches no_such_scenario" in out.stderr
