"""ServerConfig validation, redaction and the mcp.json loader."""

from __future__ import annotations

import json

import pytest

import purra_jupyter as pj
from purra_jupyter._base.config import Scrubber, ServerConfig, load_servers, secret_names

SECRET = "s3cr3t-token-value"

INVALID = [
    # (kwargs, words the message must contain)
    ({"name": ""}, "name"),
    ({"name": "has space", "command": "x"}, "name"),
    ({"name": "a" * 129, "command": "x"}, "name"),
    ({"name": "none"}, "exactly one of command"),
    ({"name": "both", "command": "x", "url": "https://example.org/mcp"}, "exactly one of command"),
    ({"name": "n", "command": ""}, "command"),
    ({"name": "n", "command": "py\x00thon"}, "command"),
    ({"name": "n", "command": "python\n"}, "command"),
    ({"name": "n", "command": "python", "args": ["ok", "bad\nline"]}, "args[1]"),
    ({"name": "n", "command": "python", "args": ["nul\x00"]}, "args[0]"),
    ({"name": "n", "command": "python", "args": "-m demo"}, "args"),
    ({"name": "n", "command": "python", "args": [1]}, "args[0]"),
    ({"name": "n", "command": "python", "headers": {"A": "b"}}, "headers"),
    ({"name": "n", "command": "python", "env": {"A": 1}}, "env"),
    ({"name": "n", "command": "python", "env": {"A=B": "x"}}, "env"),
    ({"name": "n", "command": "python", "cwd": "/tmp/\x00"}, "cwd"),
    ({"name": "n", "url": "https://example.org/mcp", "args": ["x"]}, "stdio servers only"),
    ({"name": "n", "url": "https://example.org/mcp", "env": {"A": "b"}}, "stdio servers only"),
    ({"name": "n", "url": "https://example.org/mcp", "cwd": "/tmp"}, "stdio servers only"),
    ({"name": "n", "url": "http://example.org/mcp"}, "loopback"),
    ({"name": "n", "url": "http://10.0.0.1/mcp"}, "loopback"),
    ({"name": "n", "url": "ftp://127.0.0.1/mcp"}, "https://"),
    ({"name": "n", "url": "https:///mcp"}, "host"),
    ({"name": "n", "url": "https://user:pw@example.org/mcp"}, "credentials"),
    ({"name": "n", "url": "https://token@example.org/mcp"}, "credentials"),
    ({"name": "n", "url": "https://example.org/mcp\n"}, "url"),
    ({"name": "n", "url": "https://example.org:99999/mcp"}, "valid URL"),
    ({"name": "n", "url": "https://example.org/mcp", "headers": {"Bad Name": "x"}}, "headers"),
    ({"name": "n", "url": "https://example.org/mcp", "headers": {"X-A": "a\r\nInjected: 1"}}, "headers"),
    ({"name": "n", "command": "python", "timeout": 0}, "timeout"),
    ({"name": "n", "command": "python", "timeout": 301}, "timeout"),
    ({"name": "n", "command": "python", "timeout": float("nan")}, "timeout"),
    ({"name": "n", "command": "python", "timeout": True}, "timeout"),
]


@pytest.mark.parametrize(("kwargs", "words"), INVALID)
def test_invalid_config_raises_config_invalid_naming_the_field(kwargs: dict, words: str) -> None:
    name = kwargs.pop("name")
    with pytest.raises(pj.McpSessionError) as caught:
        ServerConfig(name, **kwargs)
    assert caught.value.code == "mcp_config_invalid"
    assert words in caught.value.message
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/mcp",
        "http://127.8.9.10/mcp",
        "http://[::1]:9/mcp",
        "http://localhost/mcp",
        "https://example.org/mcp",
    ],
)
def test_http_is_allowed_for_loopback_and_https_anywhere(url: str) -> None:
    config = ServerConfig("remote", url=url)
    assert config.transport == "http"


def test_transport_is_inferred_and_args_are_kept_as_a_list() -> None:
    config = ServerConfig("docs", command="python", args=["-m", "x; touch /tmp/pwned"])
    assert config.transport == "stdio"
    assert config.args == ("-m", "x; touch /tmp/pwned")


def test_config_is_frozen_after_validation() -> None:
    headers = {"Authorization": SECRET}
    config = ServerConfig("remote", url="https://example.org/mcp", headers=headers)
    headers["Authorization"] = "changed"
    assert config.headers["Authorization"] == SECRET
    with pytest.raises(TypeError):
        config.headers["Authorization"] = "x"  # type: ignore[index]


def test_repr_and_str_redact_header_env_and_query_values() -> None:
    http = ServerConfig("remote", url=f"https://example.org/mcp?key={SECRET}", headers={"Authorization": SECRET})
    stdio = ServerConfig("local", command="python", env={"API_KEY": SECRET})
    for text in (repr(http), str(http), repr(stdio), str(stdio), http.target):
        assert SECRET not in text
    assert "Authorization" in repr(http) and "***" in repr(http)
    assert "API_KEY" in repr(stdio)


def test_errors_never_show_secret_values() -> None:
    cases = [
        {"url": f"https://user:{SECRET}@example.org/mcp"},
        {"url": "https://example.org/mcp", "headers": {"X-Key": SECRET + "\n"}},
        {"command": "python", "env": {"KEY": SECRET + "\x00"}},
        {"command": "python", "headers": {"Authorization": SECRET}},
    ]
    for kwargs in cases:
        with pytest.raises(pj.McpSessionError) as caught:
            ServerConfig("n", **kwargs)
        assert SECRET not in str(caught.value)


def _write(tmp_path, document) -> str:
    path = tmp_path / "mcp.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return str(path)


def test_load_servers_reads_mcp_servers_format(tmp_path) -> None:
    path = _write(
        tmp_path,
        {
            "mcpServers": {
                "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}, "disabled": False},
                "remote": {"type": "http", "url": "https://example.org/mcp", "headers": {"Authorization": SECRET}},
            }
        },
    )
    servers = load_servers(path)
    assert set(servers) == {"time", "remote"}
    assert servers["time"].transport == "stdio" and servers["time"].args == ("mcp-server-time",)
    assert servers["remote"].transport == "http"
    assert SECRET not in repr(servers)


def test_load_servers_reads_vscode_format(tmp_path) -> None:
    path = _write(tmp_path, {"servers": {"git": {"type": "stdio", "command": "python", "args": ["-m", "git"]}}})
    assert load_servers(path)["git"].command == "python"


@pytest.mark.parametrize(
    ("document", "words"),
    [
        ('{"mcpServers": {', "line 1, column"),
        ("[]", "JSON object"),
        ({"other": {}}, "mcpServers"),
        ({"mcpServers": []}, "mcpServers"),
        ({"mcpServers": {"a": "python"}}, "mcpServers.a must be an object"),
        ({"mcpServers": {"a": {"type": "sse", "url": "https://example.org/sse"}}}, "not supported"),
        ({"mcpServers": {"a": {"type": "stdio", "url": "https://example.org/mcp"}}}, "does not match"),
        ({"mcpServers": {"a": {"command": "python", "args": "x y"}}}, "args"),
        ({"mcpServers": {"bad name": {"command": "python"}}}, "name"),
    ],
)
def test_load_servers_malformed_files(tmp_path, document, words: str) -> None:
    with pytest.raises(pj.McpSessionError) as caught:
        load_servers(_write(tmp_path, document))
    assert caught.value.code == "mcp_config_invalid"
    assert words in caught.value.message


def test_load_servers_missing_file(tmp_path) -> None:
    with pytest.raises(pj.McpSessionError) as caught:
        load_servers(tmp_path / "absent.json")
    assert caught.value.code == "mcp_config_invalid"
    assert "Cannot read" in caught.value.message


def test_the_scrubber_hides_every_configured_secret_value_in_server_text() -> None:
    config = ServerConfig("web", url="https://example.org/mcp", headers={"Authorization": "Bearer tok-123456"})
    assert set(config.secrets) == {"Bearer tok-123456", "tok-123456"}
    scrub = Scrubber(config.secrets)
    assert scrub("got Bearer tok-123456 and tok-123456.") == "got *** and ***."
    stdio = ServerConfig("s", command="server", env={"API_KEY": "k-99999999", "DEBUG": "1", "MODE": "abc"})
    scrub = Scrubber(stdio.secrets)
    assert scrub("key k-99999999, debug 1, mode abc") == "key ***, debug 1, mode abc"
    # A value of fewer than 8 characters is not searched for, a secret's too: "read" would rewrite "read_text_file".
    short = ServerConfig("s", command="server", env={"API_KEY": "k-9999", "MODE": "read"}, secret_env=["MODE"])
    assert short.secrets == () and Scrubber(short.secrets)("read_text_file k-9999") == "read_text_file k-9999"
    assert secret_names(short).too_short == ("env API_KEY", "env MODE")
    assert Scrubber([])("nothing to hide") == "nothing to hide"


# What a careful person expects of an env name: a secret when its last word says so, never for a word inside another
# (KEYBOARD, AUTHOR, OLDPWD), the shell's PWD, or a name whose last word says what else the value is (a URL, a path).
SECRET_NAMES = ["GITHUB_TOKEN", "OPENAI_API_KEY", "DB_PASSWORD", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID",
                "CLIENT_SECRET", "GH_PAT", "SMTP_PASS", "MYSQL_PWD", "NGROK_AUTHTOKEN", "SESSION_COOKIE",
                "STRIPE_KEY", "SUPABASE_SERVICE_ROLE_KEY", "GITHUB_TOKEN_2", "githubToken", "openaiApiKey", "TOKEN",
                "API_TOKEN"]  # fmt: skip
PLAIN_NAMES = ["AUTH_SCOPE", "GIT_AUTHOR_NAME", "KEYBOARD_LAYOUT", "PWD", "OLDPWD", "SORT_KEY", "PARTITION_KEY",
               "MAX_TOKENS", "TOKEN_URL", "PASSWORD_FILE", "SECRET_NAME", "KEY_PREFIX", "DISABLE_AUTH", "PASSPORT",
               "PORT", "HOME", "PATH"]  # fmt: skip


@pytest.mark.parametrize("name", SECRET_NAMES + PLAIN_NAMES)
def test_an_env_name_says_a_secret_by_its_last_whole_word(name: str) -> None:
    config = ServerConfig("s", command="server", env={name: "a-value-long-enough"})
    assert config.is_secret_env(name) is (name in SECRET_NAMES)
    assert config.secrets == (("a-value-long-enough",) if name in SECRET_NAMES else ())


OAUTH_INVALID = [
    # (OAuth kwargs, words the message must contain)
    ({"scopes": "mcp:read"}, "scopes"),
    ({"scopes": ["two words"]}, "scopes"),
    ({"client_id": ""}, "client_id"),
    ({"client_secret": "s3cret-value"}, "client_id it belongs to"),
    ({"client_metadata_url": "http://example.org/client.json"}, "client_metadata_url"),
    ({"client_metadata_url": "https://example.org/"}, "client_metadata_url"),
    ({"authorize": "not a function"}, "authorize"),
]


@pytest.mark.parametrize(("kwargs", "words"), OAUTH_INVALID)
def test_invalid_oauth_settings_raise_config_invalid(kwargs: dict, words: str) -> None:
    with pytest.raises(pj.McpSessionError) as caught:
        pj.OAuth(**kwargs)
    assert caught.value.code == "mcp_config_invalid" and words in caught.value.message
    assert "s3cret-value" not in str(caught.value)


def test_oauth_applies_to_url_servers_only_and_keeps_its_secret_out_of_every_repr() -> None:
    oauth = pj.OAuth(scopes=["mcp:read"], client_id="client-1", client_secret=SECRET, authorize=lambda url: url)
    for kwargs in ({"command": "python"}, {"url": "https://example.org/mcp", "headers": {"authorization": "x"}}):
        with pytest.raises(pj.McpSessionError) as caught:
            ServerConfig("n", oauth=oauth, **kwargs)
        assert caught.value.code == "mcp_config_invalid", kwargs
    with pytest.raises(pj.McpSessionError) as caught:
        ServerConfig("n", url="https://example.org/mcp", oauth={"scopes": ["x"]})
    assert caught.value.code == "mcp_config_invalid" and "pj.OAuth" in caught.value.message
    config = ServerConfig("n", url="https://example.org/mcp", oauth=oauth)
    assert SECRET in config.secrets
    for text in (repr(config), str(config), repr(oauth)):
        assert SECRET not in text and "client_secret='***'" in text and "client-1" in text
