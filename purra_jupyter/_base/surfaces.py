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
    "catalog": Surface((HTML, CELL_TEXT, DATA), ("_purra.catalog.Catalog", "_purra.catalog")),
    "envelope": Surface((HTML, CELL_TEXT, DATA), ("_purra.envelope.Envelope", "_purra.envelope")),
    "raw result": Surface((HTML, CELL_TEXT, DATA), ("_purra.envelope.RawResult",)),
    "session": Surface((HTML, CELL_TEXT), ("_session.session.McpSession", "_session.session")),
    "instructions": Surface((HTML, CELL_TEXT), ("magics",)),
    "session log": Surface((HTML, CELL_TEXT), ("_base.session_log.SessionLog", "_base.session_log")),
    "stderr": Surface((CELL_TEXT,), ("_transports.stdio",)),
    "status line": Surface((HTML, CELL_TEXT), ("_ui.status.SessionStatus", "_ui.status")),
    "approval": Surface((HTML, CELL_TEXT), ("_ui.approval.PendingCall", "_ui.approval")),
    "call record": Surface((HTML, CELL_TEXT, DATA), ("_ui.records", "_purra.calls.Call", "_purra.calls")),
    "activity": Surface((HTML, CELL_TEXT), ("_base.activity", "_base.activity.ActivityLines")),
    "binding": Surface((HTML, CELL_TEXT), ("_purra.bindings.BindingEntry", "_purra.bindings")),
    "offerings": Surface(
        (HTML, CELL_TEXT),
        (
            "_beside.offerings.Offerings",
            "_beside.offerings.ResourceContents",
            "_beside.offerings.PromptMessages",
            "_beside.offerings",
            "magics.Listings",
        ),
    ),
    "forms": Surface((HTML,), ("_ui.forms", "_ui.offering_forms")),
    "view": Surface((HTML, CELL_TEXT, DATA), ("_beside.views", "_ui.views")),
    "batch": Surface((HTML, CELL_TEXT), ("_evaluation.batches.EvaluationSummary", "_evaluation.batches")),
    "frames": Surface((HTML,), ("_base.frames", "magics.frame_formatter")),
    "replay": Surface((HTML, CELL_TEXT), ("_evaluation.replays.ReplaySummary", "_evaluation.replays")),
    "chart": Surface((CELL_TEXT,), ("_base.charts.Chart", "_base.charts")),
    "authorization": Surface((HTML, CELL_TEXT), ("_ui.authorization",)),
    "questions": Surface((HTML, CELL_TEXT), ("_ui.questions", "_ui.questions.QuestionWidget")),
    "errors": Surface((CELL_TEXT,), ("_base.errors.McpSessionError", "magics")),
    "check text": Surface((CLI,), ("cli.as_text",)),
    "check json": Surface((CLI,), ("cli.as_json",)),
    "check junit": Surface((CLI,), ("cli.as_junit", "_base.junit")),
    "check github": Surface((CLI,), ("cli.as_github", "cli")),
    "junit file": Surface((FILE,), ("_evaluation.batches.assert_checks", "_base.junit")),
    "transcript": Surface((FILE,), ("_base.transcript.Transcript", "_base.transcript")),
    "checkpoint": Surface((FILE,), ("_evaluation.checkpoint.Checkpoint", "_evaluation.checkpoint")),
    "mock": Surface((WIRE,), ("mock",)),
}

__all__ = ["CELL_TEXT", "CLI", "DATA", "FILE", "HTML", "SURFACES", "WIRE", "Surface"]
