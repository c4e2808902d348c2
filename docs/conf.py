"""Sphinx configuration of the purra-jupyter docs: built offline by ``scripts/docs``, every notebook executed."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))  # the source tree's purra_jupyter, not an installed copy

project = "purra-jupyter"
author = "the purra-jupyter developers"
copyright = "2026, the purra-jupyter developers"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "magics_reference",  # _ext/magics_reference.py: the magics' reference, read from their own parsers
]

exclude_patterns = ["_build", "jupyter_execute", "**/.ipynb_checkpoints", "notebooks/*.executed.ipynb"]
html_theme = "furo"
html_title = "purra-jupyter"
html_static_path = ["_static"]
html_css_files = ["outputs.css"]

# The notebooks run at every build, on a real kernel against the demo server: a failing cell fails the build.
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_timeout = 300
nb_execution_show_tb = True
nb_merge_streams = True
# The kit's own MIME types (application/vnd.purra.*) are drawn by its JupyterLab extension: myst-nb warns that it
# has no renderer for them, then picks each output's text/html fallback, which a static page shows.
suppress_warnings = ["mystnb.unknown_mime_type"]
# A built page has no kernel: each widget output shows its static view (text/html: a pending call's tool and
# arguments, a form's fields, the status line), as in the HTML export, and no widget script is fetched from a CDN.
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]
nb_ipywidgets_js: dict[str, dict[str, str]] = {}
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "signature"

# Nitpicky mode checks every reference. Names of other projects have no pages here (no intersphinx: the build
# is offline); each pattern below is a library's, never one of purra_jupyter's own.
nitpick_ignore = [
    # purra-mcp's and purra's types, named bare where our modules import them for type checking only.
    ("py:class", "McpToolLimits"),
    ("py:class", "McpCatalogMonitor"),
    ("py:class", "ExecutionState"),
    ("py:class", "CancellationSignal"),
    ("py:class", "Path"),  # pathlib.Path, as our signatures name it (str | Path)
]
nitpick_ignore_regex = [
    ("py:.*", r"(collections\.abc|pathlib)\..*"),  # the standard library
    ("py:.*", r"(pd|pandas)\..*"),  # pandas (our modules import it as pd)
]
