"""The public surface and the cost of importing it."""

from __future__ import annotations

import subprocess
import sys

import purra_jupyter as pj


def test_public_names_are_pinned() -> None:
    assert pj.__all__ == sorted(pj.__all__)
    assert set(pj.__all__) == {
        "McpSession",
        "McpSessionError",
        "OAuth",
        "ServerConfig",
        "__version__",
        "allow_any_scope",
        "connect",
        "load_servers",
        "sessions",
    }


def test_import_leaves_the_mcp_sdk_unloaded() -> None:
    probe = "import sys, purra_jupyter; print(sorted(m for m in ('mcp', 'purra_mcp', 'pandas') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
