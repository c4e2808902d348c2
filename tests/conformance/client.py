"""A client for the MCP conformance suite's client scenarios, written with purra-jupyter's public API only.

The suite runs ``python client.py URL`` with the scenario's name in ``MCP_CONFORMANCE_SCENARIO`` (and, for some,
JSON in ``MCP_CONFORMANCE_CONTEXT``); its authorization server redirects at once, so ``authorize`` follows the
authorization URL the way a browser would and returns the address it was sent back to. The suite's tools are
written with the TypeScript SDK (draft-07 schemas, outside PurrA's profile): they are called raw.
"""

from __future__ import annotations

import json
import os
import sys

import httpx

import purra_jupyter as pj

# The suite's basic-cimd scenario expects this client id (the document never has to resolve).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
CALLS = {"tools_call": ("add_numbers", {"a": 5, "b": 3}), "sse-retry": ("test_reconnection", {})}


def follow_authorization(url: str) -> str:
    """What the browser does: open the authorization URL; the suite's server answers with the redirect. With
    ``--wrong-state`` the address handed back carries another state (a stale or forged one), with ``--denied`` an
    ``error=access_denied``. (``--scope S``
    adds a scope of the person's own to OAuth.)"""
    response = httpx.get(url, follow_redirects=False, timeout=10)
    location = response.headers.get("location", "")
    if "--denied" in sys.argv:  # what a person's "Deny" on the consent page sends back
        return location.replace("code=", "error=access_denied&code=", 1)
    return location.replace("state=", "state=forged", 1) if "--wrong-state" in sys.argv else location


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    oauth = None
    if scenario.startswith("auth/"):
        scopes = [sys.argv[i + 1] for i, word in enumerate(sys.argv[:-1]) if word == "--scope"]
        oauth = pj.OAuth(
            scopes=scopes or None,
            client_id=context.get("client_id"),
            client_secret=context.get("client_secret"),
            client_metadata_url=CLIENT_METADATA_URL,
            authorize=follow_authorization,
        )
    shown: list[str] = []  # every text the kit showed, for the tests' scan for secrets (printed on stdout)
    code = 0
    try:
        with pj.connect(pj.ServerConfig("conformance", url=url, oauth=oauth)) as session:
            tool, arguments = CALLS.get(scenario, (None, {}))
            if tool is None and scenario.startswith("auth/") and session.catalog.tools:
                tool = session.catalog.tools[0].name
            if tool is not None:
                result = session.call(tool, arguments, raw=True, approve=True)
                shown.append(repr(result))
                code = 0 if result.ok else 1
            shown += [repr(session), repr(session.config), repr(session.log), session.stderr]
    except pj.McpSessionError as error:
        said = f"\nserver_text: {error.server_text}" if error.server_text else ""  # the server's words, apart
        shown.append(f"McpSessionError: {error}{said}")
        code = 1
    print(json.dumps({"shown": shown}))
    print(shown[-1] if shown else "", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
