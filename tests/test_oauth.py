"""The notebook's authorization flow in a real kernel, against a local authorization server (the SDK's): the
person's turn shows the address, the browser comes back to the one-shot loopback listener or its address is
pasted into the kernel's input box, and only then does the session open."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import httpx
import psutil
import pytest
from conftest import HANG_GUARD, KernelCell, OAuthServer, follow_authorization, oauth_server, wait_until
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager

OPEN_URL = re.compile(r"Open this address in your browser \(the kit does not open it\): (\S+)")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[OAuthServer]:
    with oauth_server(tmp_path) as running:
        yield running


class Cell(KernelCell):
    """A cell of the authorization flow: it shows the address to open."""

    def authorization_url(self, timeout: float = 30) -> str:
        def found() -> str | None:
            self.pump()
            return next((m.group(1) for text in self.texts() if (m := OPEN_URL.search(text))), None)

        return str(wait_until(found, timeout=timeout, what="the authorization view"))


def connect_cell(server: OAuthServer, extra: str = "") -> str:
    return (
        "import purra_jupyter as pj\n"
        f"s = pj.connect(pj.ServerConfig('secure', url={server.url!r}, oauth=pj.OAuth({extra})))\n"
        "r = s.call('search_documents', {'query': 'PurrA', 'limit': 1}, approve=True)\n"
        "(s.state, r.error_code, r.text[0].split()[0])"
    )


def listening(pid: int) -> list[tuple[str, int]]:
    """The TCP sockets the kernel listens on."""
    return [
        (c.laddr.ip, c.laddr.port)
        for c in psutil.Process(pid).net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN
    ]


def listener_port(url: str) -> int:
    redirect = parse_qs(urlsplit(url).query)["redirect_uri"][0]
    assert redirect.startswith("http://127.0.0.1:") and redirect.endswith("/purra-jupyter/callback"), redirect
    return int(urlsplit(redirect).port or 0)


def with_state(address: str, state: str) -> str:
    parts = urlsplit(address)
    query = {key: values[0] for key, values in parse_qs(parts.query).items()} | {"state": state}
    return urlunsplit(parts._replace(query=urlencode(query)))


def until_expired(server: OAuthServer, had_it: float, seconds: float = 2) -> None:
    """Wait until every access token the server issued is past its lifetime of ``seconds``: refused by the server,
    and for the client too, which counts it from when the token came (before ``had_it``, a ``time.time()``). The
    time passing is what the tests that wait for it are about; the wait ends once it has passed."""

    def refused(token: str) -> bool:
        response = httpx.get(server.url, headers={"Authorization": f"Bearer {token}"}, timeout=10)
        return response.status_code == 401

    wait_until(
        lambda: time.time() > had_it + seconds and all(refused(token) for token in server.issued()),
        what=f"the tokens' {seconds} s to run out",
    )


def kernel_pid(manager: KernelManager) -> int:
    return manager.provisioner.process.pid  # type: ignore[union-attr]


def test_the_browser_comes_back_to_the_loopback_listener_which_then_is_gone(
    kernel: tuple[KernelManager, BlockingKernelClient], server: OAuthServer
) -> None:
    manager, client = kernel
    cell = Cell(client, connect_cell(server))
    url = cell.authorization_url()
    port = listener_port(url)
    prompt = cell.prompted()
    assert prompt["password"] is True  # the pasted address holds a code: never echoed, never saved
    # While the person's turn lasts, the kernel listens on 127.0.0.1 only, on the redirect address's port.
    assert ("127.0.0.1", port) in listening(kernel_pid(manager))
    assert all(ip == "127.0.0.1" for ip, p in listening(kernel_pid(manager)) if p == port)

    back = follow_authorization(url)
    page = httpx.get(back, timeout=10)
    assert page.status_code == 200 and "Authorized" in page.text
    assert page.headers["content-security-policy"] == "default-src 'none'"
    cell.finish()
    assert cell.errors() == []
    assert cell.result() == "('ready', None, 'doc-4')"
    assert port not in [p for _, p in listening(kernel_pid(manager))]  # gone after its one request
    with pytest.raises(httpx.ConnectError):
        httpx.get(back, timeout=5)
    # The view's last state names the servers (defanged, as plain text), not the address (which held the state and
    # the challenge).
    last = cell.texts()[-2:]
    assert any("authorization for 'secure' at http[:]//127.0.0.1:" in text for text in last), last
    assert not any(secret in text for secret in server.issued() for text in cell.texts())
    assert server.events()["codes"] == 1 and server.events()["tokens"] == 1


def test_a_pasted_address_connects_and_a_wrong_state_or_an_empty_box_is_refused(
    kernel: tuple[KernelManager, BlockingKernelClient], server: OAuthServer
) -> None:
    manager, client = kernel
    cell = Cell(client, connect_cell(server))
    back = follow_authorization(cell.authorization_url())
    cell.prompted()
    client.input(back)
    cell.finish()
    assert cell.errors() == [] and cell.result().startswith("('ready', None")
    client.execute("s.close()")

    wrong = Cell(client, connect_cell(server))
    back = follow_authorization(wrong.authorization_url())
    wrong.prompted()
    client.input(with_state(back, "not-the-request-state"))
    wrong.finish()
    [error] = wrong.errors()
    assert error.startswith("McpSessionError: mcp_auth_state_mismatch"), error
    assert server.events()["tokens"] == 1  # the mismatched code was never exchanged

    canceled = Cell(client, connect_cell(server))
    port = listener_port(canceled.authorization_url())
    canceled.prompted()
    client.input("")
    canceled.finish()
    [error] = canceled.errors()
    assert error.startswith("McpSessionError: mcp_auth_canceled"), error
    assert port not in [p for _, p in listening(kernel_pid(manager))]


def test_the_persons_wait_has_its_own_timeout_then_the_listener_is_gone(
    kernel: tuple[KernelManager, BlockingKernelClient], server: OAuthServer
) -> None:
    """The server's own timeout (2 s) does not run while the person has the browser; the person's (4 s) does."""
    manager, client = kernel
    code = connect_cell(server, "timeout=4").replace(")))\n", "), timeout=2))\n", 1)
    cell = Cell(client, code)
    port = listener_port(cell.authorization_url())
    started = time.monotonic()
    cell.finish()
    [error] = cell.errors()
    assert error.startswith("McpSessionError: mcp_timeout") and "no authorization within 4 s" in error, error
    # The person's 4 s ran (the lower bound), not the server's 2 s; the upper bound is a guard against a hang.
    assert 3 <= time.monotonic() - started < 2 * HANG_GUARD
    assert port not in [p for _, p in listening(kernel_pid(manager))]


def test_an_expired_authorization_asks_the_cell_that_waits_and_no_other(
    kernel: tuple[KernelManager, BlockingKernelClient], tmp_path: Path
) -> None:
    """Without a refresh token, an expired token means a new authorization. A call from another thread (as a
    widget's click runs) has no cell to ask: ``mcp_auth_required``, saying to reauthorize; the session stays
    usable, and ``s.reauthorize()`` in a cell asks there."""
    _, client = kernel
    with oauth_server(tmp_path, "--token-seconds", "2", "--no-refresh") as server:
        cell = Cell(client, connect_cell(server))
        back = follow_authorization(cell.authorization_url())
        cell.prompted()
        client.input(back)
        assert cell.finish().errors() == []
        until_expired(server, time.time())  # the cell's connect got the token
        late = Cell(
            client,
            "import threading\n"
            "out = []\n"
            "t = threading.Thread(target=lambda: out.append(s.call('search_documents', {'query': 'x', 'limit': 1}, "
            "approve=True)))\n"
            "t.start(); t.join(60)\n"
            "(out[0].error_code, 'reauthorize()' in out[0].message, s.state)",
        ).finish()
        assert late.errors() == [] and late.result() == "('mcp_auth_required', True, 'ready')", late.texts()
        again = Cell(
            client,
            "s.reauthorize()\ns.call('search_documents', {'query': 'x', 'limit': 1}, approve=True).error_code is None",
        )
        back = follow_authorization(again.authorization_url())
        again.prompted()
        client.input(back)
        assert again.finish().errors() == [] and again.result() == "True"
        assert server.events()["codes"] == 2  # connect and reauthorize: the thread's attempt asked nobody


def test_reauthorize_asks_again_and_a_refresh_needs_nobody(tmp_path: Path) -> None:
    """In a script: ``authorize`` answers; a token that expired is refreshed without asking; ``reauthorize()``
    forgets the tokens and asks again."""
    import purra_jupyter as pj

    asked: list[str] = []

    def authorize(url: str) -> str:
        asked.append(url)
        return follow_authorization(url)

    with oauth_server(tmp_path, "--token-seconds", "2") as server:
        session = pj.connect(pj.ServerConfig("secure", url=server.url, oauth=pj.OAuth(authorize=authorize)))
        try:
            assert len(asked) == 1
            until_expired(server, time.time())  # the connect got the token
            result = session.call("search_documents", {"query": "PurrA", "limit": 1}, approve=True)
            assert result.error_code is None and len(asked) == 1
            assert server.events()["refreshed"] == 1
            session.reauthorize()
            assert len(asked) == 2 and server.events()["tokens"] == 3
            assert session.call("search_documents", {"query": "x", "limit": 1}, approve=True).error_code is None
            shown = repr(session) + json.dumps([row.detail for row in session.log])
            assert not [secret for secret in server.issued() if secret in shown]
        finally:
            session.close()


# --- in this process: failures of the flow, the magic, the files ---------------------------------------------


@pytest.mark.parametrize(
    ("flag", "code"),
    [
        ("--refuse-registration", "mcp_auth_registration_failed"),
        ("--refuse-token", "mcp_auth_token_failed"),
        ("--wrong-issuer", "mcp_auth_issuer_mismatch"),
    ],
)
def test_a_refused_registration_code_exchange_or_issuer_fails_connect_with_its_code(
    tmp_path: Path, flag: str, code: str
) -> None:
    import purra_jupyter as pj

    with oauth_server(tmp_path, flag) as server:
        config = pj.ServerConfig("secure", url=server.url, oauth=pj.OAuth(authorize=follow_authorization))
        with pytest.raises(pj.McpSessionError) as caught:
            pj.connect(config)
        issued, events = server.issued(), server.events()
    assert caught.value.code == code, caught.value
    assert events["tokens"] == 0 and (flag != "--wrong-issuer" or events["registered"] == 0)
    assert "\n" not in caught.value.message
    said = f"{caught.value.message} {caught.value.server_text}"
    assert [secret for secret in issued if secret in said] == []


def test_a_server_behind_oauth_connected_without_it_says_to_add_oauth(tmp_path: Path) -> None:
    import purra_jupyter as pj

    with oauth_server(tmp_path) as server, pytest.raises(pj.McpSessionError) as caught:
        pj.connect(pj.ServerConfig("secure", url=server.url))
    assert caught.value.code == "mcp_auth_required"
    assert "--oauth (pj.OAuth())" in caught.value.message


def test_the_magic_and_the_server_files_carry_oauth(ip: object, tmp_path: Path) -> None:
    import purra_jupyter as pj

    for line, says in (
        ("x --oauth -- python -m demo", "--oauth is for a server reached with --url"),
        ("x --url https://example.org/mcp --scope read", "--scope and --client-id go with --oauth"),
    ):
        with pytest.raises(Exception, match=re.escape(says)):
            ip.run_line_magic("mcp_connect", line)  # type: ignore[attr-defined]

    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "plain": {"url": "https://example.org/mcp", "oauth": True},
                    "registered": {
                        "url": "https://example.org/mcp",
                        "oauth": {"clientId": "kit", "clientSecret": "s3cr3t-value", "scopes": ["a", "b"]},
                    },
                    "off": {"url": "https://example.org/mcp", "oauth": {"enabled": False}},
                }
            }
        )
    )
    servers = pj.load_servers(path)
    assert servers["plain"].oauth == pj.OAuth()
    registered = servers["registered"].oauth
    assert registered is not None and registered.client_id == "kit" and registered.scopes == ("a", "b")
    assert "s3cr3t-value" not in repr(servers["registered"]) and "s3cr3t-value" in servers["registered"].secrets
    assert servers["off"].oauth is None
    path.write_text(json.dumps({"mcpServers": {"bad": {"url": "https://example.org/mcp", "oauth": "yes"}}}))
    with pytest.raises(pj.McpSessionError, match="oauth must be true or an object"):
        pj.load_servers(path)


def test_the_authorization_view_shows_a_hostile_address_as_text() -> None:
    from concurrent.futures import Future

    from purra_jupyter._transports.oauth import AuthorizationRequest
    from purra_jupyter._ui.authorization import AuthorizationView

    url = "https://as.example/authorize?x='><script>alert(1)</script>&y=\"><img src=x onerror=alert(2)>"
    view = AuthorizationView(AuthorizationRequest("srv<b>", url, "http://127.0.0.1:1/cb", Future(), 60))
    html = view.bundle()["text/html"]
    assert "<script" not in html and "<img" not in html and "srv<b>" not in html
    assert html.count("<a ") == 1 and "href='https://as.example/authorize?x=&#x27;&gt;&lt;script&gt;" in html


def test_an_authorization_address_a_browser_should_not_open_is_refused() -> None:
    """The authorization URL comes from the server's metadata and the person opens it: only https, or http on
    this machine."""
    import anyio

    from purra_jupyter._transports.oauth import AuthFailed, Authorization

    for url in ("javascript:alert(1)", "http://as.example/authorize?state=x", "data:text/html,hi"):
        with pytest.raises(AuthFailed) as caught:
            anyio.run(Authorization(None, None, lambda *_: None).redirect, url)
        assert caught.value.code == "mcp_auth_insecure", url
    anyio.run(Authorization(None, None, lambda *_: None).redirect, "http://127.0.0.1:9/authorize?state=x")
