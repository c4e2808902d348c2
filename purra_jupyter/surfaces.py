"""Every surface a server's data reaches, in one place: what a person (or a CI runner, or a file) gets of it.

Each surface names its medium (the egress it goes out through, see ``egress``) and the code that makes it: a class
(its ``__repr__`` and ``_repr_mimebundle_``) or a module. ``tests/test_hostile_matrix.py`` attacks every surface with
every attack class and fails when a surface has no row there; it also fails when code of the package writes to a
medium (a bundle, a repr, a printed line, a command's line, a file) from a place no surface here names. So a new
surface joins the matrix in the commit that adds it.
"""

from __future__ import annotations

from dataclasses import dataclass

HTML = "notebook HTML (markup.Html)"
CELL_TEXT = "plain text in a cell (egress.CellText)"
CLI = "command-line output (egress.CliText)"
FILE = "JSON Lines file (untrusted.json_line)"
WIRE = "JSON-RPC answers of the kit's mock server"
DATA = "JSON for the JupyterLab extension (drawn with textContent)"


@dataclass(frozen=True)
class Surface:
    """A surface: the media it goes out through and the places in ``purra_jupyter`` that make it (``module`` or
    ``module.Class`` or ``module.function``)."""

    media: tuple[str, ...]
    places: tuple[str, ...]


SURFACES: dict[str, Surface] = {
    "catalog": Surface((HTML, CELL_TEXT, DATA), ("catalog.Catalog", "catalog")),
    "envelope": Surface((HTML, CELL_TEXT, DATA), ("envelope.Envelope", "envelope")),
    "raw result": Surface((HTML, CELL_TEXT, DATA), ("envelope.RawResult",)),
    "session": Surface((HTML, CELL_TEXT), ("session.McpSession", "session")),
    "instructions": Surface((HTML, CELL_TEXT), ("magics",)),
    "session log": Surface((HTML, CELL_TEXT), ("session_log.SessionLog", "session_log")),
    "stderr": Surface((CELL_TEXT,), ("stdio_transport",)),
    "status line": Surface((HTML, CELL_TEXT), ("ui.status.SessionStatus", "ui.status")),
    "approval": Surface((HTML, CELL_TEXT), ("ui.approval.PendingCall", "ui.approval")),
    "call record": Surface((HTML, CELL_TEXT, DATA), ("ui.records", "calls.Call", "calls")),
    "activity": Surface((HTML, CELL_TEXT), ("activity", "activity.ActivityLines")),
    "binding": Surface((HTML, CELL_TEXT), ("bindings.BindingEntry", "bindings")),
    "offerings": Surface(
        (HTML, CELL_TEXT),
        (
            "offerings.Offerings",
            "offerings.ResourceContents",
            "offerings.PromptMessages",
            "offerings",
            "magics.Listings",
        ),
    ),
    "forms": Surface((HTML,), ("ui.forms", "ui.offerings")),
    "view": Surface((HTML, CELL_TEXT, DATA), ("apps", "ui.apps")),
    "batch": Surface((HTML, CELL_TEXT), ("batches.EvaluationSummary", "batches")),
    "replay": Surface((HTML, CELL_TEXT), ("replays.ReplaySummary", "replays")),
    "chart": Surface((CELL_TEXT,), ("charts.Chart", "charts")),
    "authorization": Surface((HTML, CELL_TEXT), ("ui.authorization",)),
    "errors": Surface((CELL_TEXT,), ("errors.McpSessionError", "magics")),
    "check text": Surface((CLI,), ("cli.as_text",)),
    "check json": Surface((CLI,), ("cli.as_json",)),
    "check junit": Surface((CLI,), ("cli.as_junit", "junit")),
    "check github": Surface((CLI,), ("cli.as_github", "cli")),
    "junit file": Surface((FILE,), ("batches.assert_checks", "junit")),
    "transcript": Surface((FILE,), ("transcript.Transcript", "transcript")),
    "checkpoint": Surface((FILE,), ("checkpoint.Checkpoint", "checkpoint")),
    "mock": Surface((WIRE,), ("mock",)),
}

__all__ = ["CELL_TEXT", "CLI", "DATA", "FILE", "HTML", "SURFACES", "WIRE", "Surface"]
