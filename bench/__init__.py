"""Benchmarks of purra-jupyter against the raw ``mcp`` SDK, measured in the same run.

Run ``scripts/bench`` (``--quick`` for a smoke run, scenario names to filter). Every scenario alternates
blocks of raw-SDK and kit work in one process, so machine noise hits both sides alike, and prints a
human line plus one JSON line; a summary table comes last. Timing claims live here as ratios, never
as timed tests (DESIGN.md §8).
"""
