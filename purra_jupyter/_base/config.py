"""Server configurations: validated once, redacted everywhere they are shown.

A ``ServerConfig`` is either stdio (``command``) or Streamable HTTP (``url``, with static headers or the
MCP authorization flow, ``OAuth``). The command and its arguments go to the OS as a list, never through a
shell. ``repr`` shows header and env *values* as ``***``. What the kit scrubs from everything a server sends
(``ServerConfig.secrets``) is narrower, so a server's words stay readable: header values, a client secret and
every token always; env values whose names end in a word that says so (``GITHUB_TOKEN``, ``OPENAI_API_KEY``,
``DB_PASSWORD``: ``is_secret_env_name``) or that the person lists in ``secret_env``; and the query values of the
URL. A value of fewer than ``MIN_SCRUBBED_CHARS`` characters is not searched for (``SecretNames`` says which).
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeAlias
from urllib.parse import quote, quote_plus, unquote_plus, urlsplit

from .errors import McpSessionError, server_words, shown
from .wire import CONFIG_INVALID, HTTP, MEMORY, STDIO

# A person's part of the authorization flow: the authorization URL in, the address the browser was redirected to
# out (sync, or async); what it returns is checked before use.
Authorize: TypeAlias = Callable[[str], str | Awaitable[str]]

REDACTED = "***"
# Shorter values are not searched for in what a server sends: a secret of "read" cannot be told from the word, and
# scrubbing it would rewrite the server's data ("read_text_file" as "***_text_file"). Eight is the shortest a
# password may be (NIST SP 800-63B); keys and tokens are longer. The session names the values left out
# (``SecretNames``).
MIN_SCRUBBED_CHARS = 8
MAX_TIMEOUT_SECONDS = 300.0  # purra-mcp's McpToolLimits.timeout_ms maximum
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")  # purra-mcp's server id rule: the name is the server id
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 token
_ENV_NAME = re.compile(r"[^=\x00]+")
# The words of an env name: ``GITHUB_TOKEN_2`` -> GITHUB, TOKEN, 2; ``openaiApiKey`` -> openai, Api, Key.
_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# The last word of an env name that says its value is a secret, by convention (``GITHUB_TOKEN``, ``CLIENT_SECRET``,
# ``DB_PASSWORD``, ``SMTP_PASS``, ``NGROK_AUTHTOKEN``, ``GH_PAT``, ``SESSION_COOKIE``). Only the last word counts: it
# names what the value is, so ``TOKEN_URL``, ``PASSWORD_FILE``, ``SECRET_NAME`` and ``MAX_TOKENS`` hold an address, a
# path, a name and a number, and ``AUTH_SCOPE``, ``GIT_AUTHOR_NAME``, ``KEYBOARD_LAYOUT`` hold no secret word at all.
# ``AUTH`` is not one: it names the subject (``AUTH_MODE=oauth``, ``DISABLE_AUTH``), and its credentials end in a word
# of their own (``AUTH_TOKEN``).
SECRET_WORDS = frozenset({"TOKEN", "AUTHTOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "PASSPHRASE", "PAT", "COOKIE",
                          "APIKEY", "SECRETKEY", "ACCESSKEY", "KEY", "PWD"})  # fmt: skip
# ``…_KEY`` is a credential (``OPENAI_API_KEY``, ``AWS_SECRET_ACCESS_KEY``, ``STRIPE_KEY``,
# ``SUPABASE_SERVICE_ROLE_KEY``) unless the word before it says the key is a field of data (``SORT_KEY``), whose value
# (a column's name) is a server's word too.
DATA_KEYS = frozenset({"SORT", "PARTITION", "PRIMARY", "FOREIGN", "RANGE", "HASH", "ROUTING", "CACHE", "GROUP",
                       "INDEX", "LOOKUP", "SHARD", "DEDUP", "IDEMPOTENCY", "UNIQUE", "OBJECT", "ROW", "FIELD",
                       "COLUMN"})  # fmt: skip
_LINE_BREAKS = ("\x00", "\n", "\r")


def _invalid(message: str) -> McpSessionError:
    return McpSessionError(CONFIG_INVALID, message)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine (127.0.0.0/8, ::1, localhost): the only hosts http:// may reach."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_secure(scheme: str, host: str) -> bool:
    """https anywhere, http only to this machine: what every address the kit reaches, or has a person open,
    must be."""
    return scheme == "https" or (scheme == "http" and is_loopback(host))


def is_secret_env_name(name: str) -> bool:
    """Whether an env name says its value is a secret: its last word is one of ``SECRET_WORDS`` (a trailing number
    aside: ``GITHUB_TOKEN_2``), in any case, as a whole word (``KEYBOARD`` is not ``KEY``, ``AUTHOR`` not ``AUTH``).
    ``KEY`` after a word of ``DATA_KEYS`` (``SORT_KEY``) is not, ``KEY_ID`` is (``AWS_ACCESS_KEY_ID``); ``PWD``
    alone is the shell's working directory (carried by every ``env={**os.environ}``), ``MYSQL_PWD`` a password."""
    words = [word.upper() for word in _NAME_WORDS.findall(name)]
    while words and words[-1].isdigit():
        words.pop()
    if words[-2:] == ["KEY", "ID"]:  # AWS_ACCESS_KEY_ID: a key pair's other half, which names the account
        words.pop()
    if not words or words[-1] not in SECRET_WORDS:
        return False
    before = words[-2] if len(words) > 1 else None
    if words[-1] == "KEY":
        return before not in DATA_KEYS
    return words[-1] != "PWD" or before is not None


def redact_url(url: str) -> str:
    """The URL without credentials and with query values hidden (tokens often travel there)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return REDACTED
    if ":" in host:
        host = f"[{host}]"
    try:
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        port = ""
    query = "&".join(f"{pair.split('=', 1)[0]}={REDACTED}" for pair in parts.query.split("&") if pair)
    return f"{parts.scheme}://{host}{port}{parts.path}" + (f"?{query}" if query else "")


KERNEL_PYTHON = "python"  # how the kit shows the interpreter it runs in


def shown_program(command: str) -> str:
    """``command`` as the kit shows it: this interpreter (``sys.executable``, what ``{sys.executable}`` expands to)
    as ``python``, so a status line, a log or a saved notebook does not carry the path of one machine's
    environment (its home, its checkout); any other program as written."""
    return KERNEL_PYTHON if command == sys.executable else command


def _query_pairs(url: str | None) -> list[tuple[str, str]]:
    try:
        query = urlsplit(url or "").query
    except ValueError:
        return []
    pairs = [pair.split("=", 1) for pair in query.split("&") if "=" in pair]
    return [(unquote_plus(key), unquote_plus(value)) for key, value in pairs]


@dataclass(frozen=True, slots=True)
class SecretNames:
    """Where a config's secrets come from, by name (never a value): ``scrubbed`` are searched for in everything the
    server sends; ``too_short`` are of fewer than ``MIN_SCRUBBED_CHARS`` characters, so they are not (a server's
    word could be one); ``others`` counts the env values that are no secret."""

    scrubbed: tuple[str, ...] = ()
    too_short: tuple[str, ...] = ()
    others: int = 0

    def __str__(self) -> str:
        """One line for the session's table and log."""
        scrubbed = ", ".join(self.scrubbed) or "none"
        short = (f"; not searched for, under {MIN_SCRUBBED_CHARS} characters (a server's word could be one): "
                 f"{', '.join(self.too_short)}") if self.too_short else ""  # fmt: skip
        others = (f"; {self.others} other env value{'s are' if self.others != 1 else ' is'} no secret (secret_env "
                  "names more)") if self.others else ""  # fmt: skip
        return f"scrubbed as ***: {scrubbed}{short}{others}"


@dataclass(frozen=True, slots=True, repr=False)
class OAuth:
    """The MCP authorization flow (OAuth 2.1 with PKCE) for a url server, run by the MCP SDK's
    ``OAuthClientProvider``.

    ``scopes``: the scopes to ask for (default: what the server names). ``client_id`` / ``client_secret``: a
    client registered beforehand (default: dynamic registration, or ``client_metadata_url``, a Client ID
    Metadata Document the authorization server fetches). ``authorize(url) -> redirected_url``: what a person
    would do in a browser (open ``url``, log in, return the address the browser was sent to); without it the
    notebook asks, and the person has ``timeout`` seconds (apart from the server's own ``ServerConfig.timeout``,
    which does not run meanwhile)."""

    scopes: Sequence[str] | None = None
    client_id: str | None = None
    client_secret: str | None = None
    client_metadata_url: str | None = None
    authorize: Authorize | None = None
    timeout: float = 300.0

    def __post_init__(self) -> None:
        if self.scopes is not None:
            if isinstance(self.scopes, str) or not all(isinstance(s, str) and s and " " not in s for s in self.scopes):
                raise _invalid("OAuth scopes must be a list of scope names without spaces.")
            object.__setattr__(self, "scopes", tuple(self.scopes))
        for name in ("client_id", "client_secret", "client_metadata_url"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value or any(c in value for c in _LINE_BREAKS)):
                raise _invalid(f"OAuth {name} must be a non-empty string without line breaks.")
        if self.client_secret is not None and self.client_id is None:
            raise _invalid("OAuth client_secret needs the client_id it belongs to.")
        if self.client_metadata_url is not None and not _is_https_with_path(self.client_metadata_url):
            raise _invalid(
                "OAuth client_metadata_url must be an https:// URL with a path (a Client ID Metadata Document)."
            )
        if self.authorize is not None and not callable(self.authorize):
            raise _invalid("OAuth authorize must be a function taking the authorization URL.")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, int | float) or not 0 < self.timeout <= 3600:
            raise _invalid("OAuth timeout must be a number of seconds above 0 and at most 3600.")

    def __repr__(self) -> str:
        parts = [f"scopes={list(self.scopes)!r}" if self.scopes is not None else "scopes=None"]
        if self.client_id is not None:
            parts.append(f"client_id={self.client_id!r}")
        if self.client_secret is not None:
            parts.append(f"client_secret={REDACTED!r}")
        if self.client_metadata_url is not None:
            parts.append(f"client_metadata_url={self.client_metadata_url!r}")
        if self.authorize is not None:
            parts.append("authorize=<function>")
        if self.timeout != 300.0:
            parts.append(f"timeout={self.timeout:g}")
        return f"OAuth({', '.join(parts)})"


def _is_https_with_path(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme == "https" and bool(parts.hostname) and parts.path not in ("", "/")


@dataclass(frozen=True, slots=True, repr=False)
class ServerConfig:
    """How to reach one MCP server; ``timeout`` is in seconds (connect and each request)."""

    name: str
    command: str | None = field(default=None, kw_only=True)
    args: Sequence[str] = field(default=(), kw_only=True)
    env: Mapping[str, str] | None = field(default=None, kw_only=True)
    # Names of ``env`` entries whose values are secrets although their names do not say so (see ``secrets``).
    secret_env: Sequence[str] = field(default=(), kw_only=True)
    cwd: str | Path | None = field(default=None, kw_only=True)
    url: str | None = field(default=None, kw_only=True)
    headers: Mapping[str, str] | None = field(default=None, kw_only=True)
    oauth: OAuth | None = field(default=None, kw_only=True)
    timeout: float = field(default=30.0, kw_only=True)
    # Tools' own views (MCP Apps): advertised to the server and rendered when on; ``None`` lets the session decide
    # (on where its outputs reach a notebook frontend, off in a script or a terminal).
    views: bool | None = field(default=None, kw_only=True)
    # An MCP server object in this process (the SDK's low-level ``mcp.server.lowlevel.Server``), reached in memory.
    server: object = field(default=None, kw_only=True)
    # The folders the server may work in, as it asks (``roots/list``): paths or ``file://`` URIs, kept as ``file://``
    # URIs of absolute paths. ``None``: the session declares no roots (the server is refused if it asks).
    roots: Sequence[str | Path] | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        _check_name(self.name)
        if sum(value is not None for value in (self.command, self.url, self.server)) != 1:
            raise _invalid(
                f"Server '{self.name}' needs exactly one of command (stdio), url (Streamable HTTP) or server (an MCP "
                "server object in this process)."
            )
        if self.command is not None:
            self._check_stdio()
        elif self.url is not None:
            self._check_http()
        else:
            self._check_memory()
        check_timeout(self.timeout, f"Server '{self.name}': timeout")
        if self.views is not None and not isinstance(self.views, bool):
            raise _invalid(f"Server '{self.name}': views must be True, False or None (the session decides).")
        # Freeze containers so a config cannot change after it was validated.
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "secret_env", tuple(self.secret_env))
        for name in ("env", "headers"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, MappingProxyType(dict(value)))
        if self.cwd is not None:
            object.__setattr__(self, "cwd", str(self.cwd))
        object.__setattr__(self, "timeout", float(self.timeout))
        if self.roots is not None:
            object.__setattr__(self, "roots", file_uris(self.roots, f"Server '{self.name}': roots"))

    def _check_stdio(self) -> None:
        where = f"Server '{self.name}'"
        if self.headers is not None or self.oauth is not None:
            raise _invalid(f"{where}: headers and oauth apply to url servers only; a stdio server takes env.")
        if not isinstance(self.command, str) or not self.command.strip():
            raise _invalid(f"{where}: command must be a non-empty string.")
        _check_no_line_breaks(where, "command", self.command)
        if isinstance(self.args, str) or not isinstance(self.args, Sequence):
            raise _invalid(f"{where}: args must be a list of strings.")
        for index, arg in enumerate(self.args):
            if not isinstance(arg, str):
                raise _invalid(f"{where}: args[{index}] must be a string.")
            _check_no_line_breaks(where, f"args[{index}]", arg)
        if self.env is not None:
            _check_string_mapping(where, "env", self.env, _ENV_NAME)
        if isinstance(self.secret_env, str) or not all(isinstance(name, str) for name in self.secret_env):
            raise _invalid(f"{where}: secret_env must be a list of env names.")
        unknown = [name for name in self.secret_env if name not in (self.env or {})]
        if unknown:
            raise _invalid(f"{where}: secret_env names {unknown[0]!r}, which env does not set.")
        if self.cwd is not None and (not isinstance(self.cwd, str | Path) or "\x00" in str(self.cwd)):
            raise _invalid(f"{where}: cwd must be a directory path without NUL characters.")

    def _check_http(self) -> None:
        where = f"Server '{self.name}'"
        if self.args or self.env is not None or self.secret_env or self.cwd is not None:
            raise _invalid(f"{where}: args, env and cwd apply to stdio servers only, not to a url server.")
        if not isinstance(self.url, str) or any(c in self.url for c in (*_LINE_BREAKS, " ")):
            raise _invalid(f"{where}: url must be a string without spaces or line breaks.")
        try:
            parts = urlsplit(self.url)
            host = parts.hostname
            parts.port  # noqa: B018 - raises ValueError on a malformed port
        except ValueError:
            raise _invalid(f"{where}: url is not a valid URL.") from None
        if parts.scheme not in ("http", "https") or not host:
            raise _invalid(f"{where}: url must start with https:// (or http:// for a loopback host) and name a host.")
        if parts.username is not None or parts.password is not None:
            raise _invalid(f"{where}: url must not carry credentials; send them in headers instead.")
        if not is_secure(parts.scheme, host):
            raise _invalid(
                f"{where}: http:// is allowed only for loopback hosts (127.0.0.0/8, ::1, localhost); "
                f"use https:// for {host}."
            )
        if self.headers is not None:
            _check_string_mapping(where, "headers", self.headers, _HEADER_NAME)
        if self.oauth is not None and not isinstance(self.oauth, OAuth):
            raise _invalid(f"{where}: oauth must be a pj.OAuth(...).")
        if self.oauth is not None and any(key.lower() == "authorization" for key in self.headers or {}):
            raise _invalid(f"{where}: give an Authorization header or oauth, not both.")

    def _check_memory(self) -> None:
        where = f"Server '{self.name}'"
        if (
            self.args
            or self.env is not None
            or self.secret_env
            or self.cwd is not None
            or self.headers is not None
            or self.oauth
        ):
            raise _invalid(f"{where}: args, env, cwd, headers and oauth do not apply to a server in this process.")
        if not all(callable(getattr(self.server, name, None)) for name in ("run", "create_initialization_options")):
            raise _invalid(f"{where}: server must be an MCP server object (mcp.server.lowlevel.Server).")

    @property
    def transport(self) -> str:
        """``"stdio"``, ``"http"`` (Streamable HTTP) or ``"memory"`` (a server object in this process)."""
        return STDIO if self.command is not None else HTTP if self.url is not None else MEMORY

    def with_timeout(self, timeout: float) -> ServerConfig:
        """The same server with another ``timeout`` (seconds), validated again."""
        return replace(self, timeout=timeout)

    def with_views(self, views: bool) -> ServerConfig:
        """The same server with tools' views on or off."""
        return replace(self, views=views)

    def is_secret_env(self, name: str) -> bool:
        """Whether the env value of ``name`` is a secret: its name says so (``is_secret_env_name``), or
        ``secret_env`` lists it."""
        return name in self.secret_env or is_secret_env_name(name)

    @property
    def secrets(self) -> tuple[str, ...]:
        """What is scrubbed from everything the server sends (see ``secret_sources``): each value of at least
        ``MIN_SCRUBBED_CHARS`` characters."""
        return tuple(value for _, value in secret_sources(self) if len(value) >= MIN_SCRUBBED_CHARS)

    @property
    def target(self) -> str:
        """What the server is, safe to show: the command line (``shown_program``) or the redacted URL."""
        if self.command is not None:
            return " ".join([shown_program(self.command), *self.args])
        if self.server is not None:
            return f"{type(self.server).__name__} in this process"
        return redact_url(self.url or "")

    def __repr__(self) -> str:
        parts = [repr(self.name)]
        if self.command is not None:
            parts += [f"command={self.command!r}", f"args={list(self.args)!r}"]
            if self.env is not None:
                parts.append(f"env={ {key: REDACTED for key in self.env}!r}")
            if self.secret_env:
                parts.append(f"secret_env={list(self.secret_env)!r}")
            if self.cwd is not None:
                parts.append(f"cwd={self.cwd!r}")
        elif self.server is not None:
            parts.append(f"server=<{type(self.server).__name__}>")
        else:
            parts.append(f"url={redact_url(self.url or '')!r}")
            if self.headers is not None:
                parts.append(f"headers={ {key: REDACTED for key in self.headers}!r}")
            if self.oauth is not None:
                parts.append(f"oauth={self.oauth!r}")
        parts.append(f"timeout={self.timeout!r}")
        if self.views is not None:
            parts.append(f"views={self.views!r}")
        return f"ServerConfig({', '.join(parts)})"

    __str__ = __repr__


def secret_sources(config: ServerConfig) -> list[tuple[str, str]]:
    """Each secret of ``config`` with where it comes from: every header value and the credential after a header's
    scheme word (``Bearer <token>``), the client secret, the env values ``is_secret_env`` names, and every query value
    of the URL (tokens often travel there; ``redact_url`` hides them where the kit shows a URL, this catches them in
    texts that httpx, the SDK or a server build)."""
    sources = [(f"env {name}", value) for name, value in (config.env or {}).items() if config.is_secret_env(name)]
    for name, value in (config.headers or {}).items():
        sources.append((f"header {name}", value))
        if " " in value.strip():
            sources.append((f"header {name}'s credential", value.strip().split(" ", 1)[1]))
    sources += [(f"the URL's query value {name}", value) for name, value in _query_pairs(config.url)]
    if config.oauth is not None and config.oauth.client_secret is not None:
        sources.append(("OAuth client_secret", config.oauth.client_secret))
    return [(where, value.strip()) for where, value in sources if value.strip()]


def secret_names(config: ServerConfig) -> SecretNames:
    """Which of ``config``'s values are scrubbed, and which are too short to be, by name (never a value)."""
    sources = secret_sources(config)
    scrubbed = [where for where, value in sources if len(value) >= MIN_SCRUBBED_CHARS]
    if config.oauth is not None:
        scrubbed.append("the tokens the authorization obtains")
    too_short = [where for where, value in sources if len(value) < MIN_SCRUBBED_CHARS]
    others = sum(not config.is_secret_env(name) for name in config.env or {})
    return SecretNames(tuple(dict.fromkeys(scrubbed)), tuple(dict.fromkeys(too_short)), others)


def transit_forms(secret: str) -> set[str]:
    """The forms a secret takes on its way back from a server: as it is, JSON-escaped (a string inside a JSON text a
    server quotes, with and without ASCII escapes) and URL-encoded (a query or a path)."""
    forms = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1], quote(secret, safe=""),
             quote(secret), quote_plus(secret)}  # fmt: skip
    return {form for form in forms if len(form) >= MIN_SCRUBBED_CHARS}


class Scrubber:
    """Replaces each secret by ``***``, in every form ``transit_forms`` names, longest first, so no part of one is
    left showing: in a text (``__call__``) or in every string of a JSON value, keys included (``value``).

    A server's message is scrubbed as values, once, where it enters (``ingress``); text that is not JSON (stderr,
    an HTTP body, what httpx or the SDK say) where it is read. Text is scrubbed whole, then cut (``shown``,
    ``words``, ``cut``): cut first, a secret across the cut would leave its first part. Values of fewer than
    ``MIN_SCRUBBED_CHARS`` characters are not searched for. A secret the server transforms (base64, reversed,
    split) is out of reach."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self.longest = 0  # characters of the longest form: what a reader keeps past a cut (see ``margin``)
        self.add(*secrets)

    def add(self, *secrets: str) -> None:
        """Scrub these too from now on (tokens the authorization flow obtains)."""
        for secret in secrets:
            self._values |= transit_forms(secret)
        values = sorted(self._values, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, values))) if values else None
        self.longest = len(values[0]) if values else 0

    def __bool__(self) -> bool:
        """Whether there is anything to scrub."""
        return self._pattern is not None

    def __call__(self, text: str) -> str:
        pattern = self._pattern  # one reading: another thread may add a secret meanwhile
        return pattern.sub(REDACTED, text) if pattern is not None else text

    def value(self, value: Any) -> Any:
        """A JSON value with every string in it scrubbed (object keys too); the same object when nothing changed."""
        pattern = self._pattern
        if pattern is None:
            return value
        return _scrubbed(value, pattern)

    def margin(self, chars: int) -> int:
        """How many bytes of UTF-8 a reader keeps to show ``chars`` characters scrubbed: enough that a secret
        starting before the cut is read whole."""
        return 4 * (chars + self.longest)

    def cut(self, text: str, chars: int) -> str:
        """``text`` scrubbed, then at most ``chars`` characters (``…`` marks a cut)."""
        text = self(text)
        return text if len(text) <= chars else text[:chars] + "…"

    def shown(self, text: str) -> str:
        """Server text as a message or a log row quotes it: scrubbed, then ``errors.shown``."""
        return shown(self(text))

    def words(self, text: str) -> str:
        """A server's own words as a result keeps them: scrubbed, then ``errors.server_words``."""
        return server_words(self(text))


def _scrubbed(value: Any, pattern: re.Pattern[str]) -> Any:
    """``value`` with ``pattern`` replaced in every string (its depth is bounded where it was parsed)."""
    if isinstance(value, str):
        return pattern.sub(REDACTED, value)
    if not isinstance(value, dict | list):
        return value
    changed = False

    def item(inner: Any) -> Any:
        nonlocal changed
        new = _scrubbed(inner, pattern)
        changed = changed or new is not inner
        return new

    if isinstance(value, list):
        items = [item(inner) for inner in value]
        return items if changed else value
    pairs = {item(key): item(inner) for key, inner in value.items()}  # (``re.sub`` returns a string it left as it is)
    return pairs if changed else value


def file_uris(roots: object, where: str) -> tuple[str, ...]:
    """``roots`` (paths, or ``file://`` URIs) as ``file://`` URIs of absolute paths (a relative path is taken from
    the current directory); anything else is ``mcp_config_invalid``. A path need not exist (a server may make it)."""
    if isinstance(roots, str | Path) or not isinstance(roots, Sequence):
        raise _invalid(f"{where} must be a list of paths or file:// URIs.")
    uris = []
    for index, root in enumerate(roots):
        if isinstance(root, str) and "://" in root:
            parts = urlsplit(root)
            if parts.scheme != "file" or parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
                raise _invalid(f"{where}[{index}] must be a path or a file:// URI of an absolute path.")
            uris.append(f"file://{parts.path}")
        elif isinstance(root, str | Path) and str(root) and "\x00" not in str(root):
            uris.append(Path(root).expanduser().absolute().as_uri())
        else:
            raise _invalid(f"{where}[{index}] must be a path or a file:// URI.")
    return tuple(uris)


def _check_name(name: object) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _invalid(
            f"Server name {name!r} is invalid: use 1 to 128 letters, digits, '_', '.' or '-' (it is the server id)."
        )


def check_timeout(timeout: object, what: str) -> None:
    """A timeout is seconds above 0 and at most purra-mcp's 300 (for a server and for one call)."""
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or not 0 < timeout <= MAX_TIMEOUT_SECONDS
    ):
        raise _invalid(f"{what} must be a number of seconds above 0 and at most 300.")


def _check_no_line_breaks(where: str, field_name: str, value: str) -> None:
    if any(c in value for c in _LINE_BREAKS):
        raise _invalid(f"{where}: {field_name} must not contain NUL or line-break characters.")


def _check_string_mapping(where: str, field_name: str, value: object, key_rule: re.Pattern[str]) -> None:
    if not isinstance(value, Mapping):
        raise _invalid(f"{where}: {field_name} must be a mapping of strings to strings.")
    for key, item in value.items():
        if not isinstance(key, str) or not key_rule.fullmatch(key):
            raise _invalid(f"{where}: {field_name} has an invalid name {key!r}.")
        if not isinstance(item, str):
            raise _invalid(f"{where}: the value of {field_name}[{key!r}] must be a string.")
        if any(c in item for c in _LINE_BREAKS):
            raise _invalid(f"{where}: the value of {field_name}[{key!r}] must not contain NUL or line breaks.")


# Keys of one server entry in Claude Desktop / Cursor (mcpServers) and VS Code (servers) files.
_ENTRY_FIELDS = {"command", "args", "env", "cwd", "url", "headers", "timeout"}
_HTTP_TYPES = {"http", "streamable-http", "streamableHttp"}


@dataclass(frozen=True)
class ServerOptions:
    """What a command line (``%mcp_connect``, ``purra-jupyter check``) says of one server, as its words: a command,
    a ``--url`` or a ``--config`` file's entry ``name``; ``headers`` and ``env`` as ``K=V`` items."""

    name: str
    command: Sequence[str] = ()
    url: str | None = None
    headers: Sequence[str] = ()
    env: Sequence[str] = ()
    secret_env: Sequence[str] = ()  # names of ``env`` items whose values are secrets (see ``ServerConfig.secrets``)
    cwd: str | None = None
    config_file: str | None = None
    timeout: float | None = None
    oauth: bool = False
    scopes: Sequence[str] = ()
    client_id: str | None = None

    def to_config(self, *, default_timeout: float) -> ServerConfig:
        """The server these words describe; ``default_timeout`` applies where neither ``timeout`` nor the file's
        entry gives one. Every mistake is ``mcp_config_invalid``, in the command line's words."""
        timeout = self.timeout if self.timeout is not None else default_timeout
        if self.config_file:
            if self.command or self.url:
                raise _invalid("--config takes the server from the file; give no command.")
            servers = load_servers(self.config_file, default_timeout=default_timeout)
            if self.name not in servers:
                listed = ", ".join(servers) or "none"
                raise _invalid(f"{self.config_file} has no server '{self.name}'; it has: {listed}.")
            config = servers[self.name]
            return config if self.timeout is None else config.with_timeout(self.timeout)
        if not self.oauth and (self.scopes or self.client_id):
            raise _invalid("--scope and --client-id go with --oauth.")
        common: dict[str, Any] = {"env": _pairs(self.env, "--env"), "cwd": self.cwd,
                                  "headers": _pairs(self.headers, "--header"), "timeout": timeout}  # fmt: skip
        if self.secret_env:
            common["secret_env"] = tuple(self.secret_env)
        if self.url:
            if self.command:
                raise _invalid("Give either --url or a command after --, not both.")
            oauth = OAuth(scopes=list(self.scopes) or None, client_id=self.client_id) if self.oauth else None
            return ServerConfig(self.name, url=self.url, oauth=oauth, **common)
        if self.oauth:
            raise _invalid("--oauth is for a server reached with --url.")
        if not self.command:
            raise _invalid("Give the server: a command after -- (COMMAND [ARGS...]), --url URL or --config FILE.")
        return ServerConfig(self.name, command=self.command[0], args=list(self.command[1:]), **common)


def _pairs(items: Sequence[str], option: str) -> dict[str, str] | None:
    if not items:
        return None
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise _invalid(f"{option} takes KEY=VALUE (got an item without '=').")
        pairs[key] = value
    return pairs


def load_servers(path: str | Path, *, default_timeout: float = 30.0) -> dict[str, ServerConfig]:
    """Read ``{"mcpServers": {...}}`` (Claude Desktop, Cursor) or VS Code's ``{"servers": {...}}``.

    Keys this kit does not use (``disabled``, ``autoApprove`` ...) are ignored; a ``type`` other than
    stdio or Streamable HTTP is refused, since the kit speaks only those. An entry without a
    ``timeout`` gets ``default_timeout`` (seconds).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _invalid(
            f"Cannot read {path}: {exc.__class__.__name__}: {getattr(exc, 'strerror', None) or exc}."
        ) from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _invalid(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.") from None
    if not isinstance(document, dict):
        raise _invalid(f'{path} must hold a JSON object with "mcpServers" or "servers".')
    key = "mcpServers" if "mcpServers" in document else "servers" if "servers" in document else None
    if key is None or not isinstance(document[key], dict):
        raise _invalid(f'{path} must hold an object "mcpServers" (or VS Code\'s "servers") mapping names to servers.')
    return {name: _entry_config(path, key, name, entry, default_timeout) for name, entry in document[key].items()}


# An entry's "oauth" (as Gemini CLI and Claude Code write it): true, or an object of these keys ("enabled":
# false turns it off); other keys (a callback port, token URLs the flow discovers itself) are ignored.
_OAUTH_FIELDS = {"scopes": "scopes", "clientId": "client_id", "clientSecret": "client_secret",
                 "clientMetadataUrl": "client_metadata_url"}  # fmt: skip


def _entry_oauth(value: Any) -> OAuth | None:
    if value is True:
        return OAuth()
    if value is False or (isinstance(value, dict) and value.get("enabled", True) is False):
        return None
    if not isinstance(value, dict):
        raise _invalid("oauth must be true or an object (scopes, clientId, clientSecret, clientMetadataUrl).")
    return OAuth(**{name: value[key] for key, name in _OAUTH_FIELDS.items() if key in value})


def _entry_config(path: Path, key: str, name: str, entry: Any, default_timeout: float) -> ServerConfig:
    where = f"{path}: {key}.{name}"
    if not isinstance(entry, dict):
        raise _invalid(f"{where} must be an object.")
    kind = entry.get("type")
    if kind is not None and kind != STDIO and kind not in _HTTP_TYPES:
        raise _invalid(f"{where}: transport type {kind!r} is not supported; use stdio or Streamable HTTP (http).")
    if kind is not None and (kind == STDIO) != ("command" in entry):
        raise _invalid(
            f"{where}: type {kind!r} does not match the entry ({'command' if 'command' in entry else 'url'})."
        )
    fields: dict[str, Any] = {"timeout": default_timeout}  # JSON values, checked by ServerConfig
    fields.update({field_name: entry[field_name] for field_name in _ENTRY_FIELDS if field_name in entry})
    try:
        if "oauth" in entry:
            fields["oauth"] = _entry_oauth(entry["oauth"])
        return ServerConfig(name, **fields)
    except McpSessionError as exc:
        raise _invalid(f"{where}: {exc.message}") from None
    except TypeError as exc:
        raise _invalid(f"{where}: {exc}.") from None
