"""What a server asks a person to fill in or to open, read by pure rules before anything is shown or built.

Consent is exact only when the person sees everything that will be sent on their behalf, and where it goes:

- a form (``elicitation/create``'s ``requestedSchema``) must be MCP's restricted form, a flat object of primitive or
  enum properties (MCP 2025-11-25), of at most ``MAX_FIELDS`` fields, ``MAX_NAME_CHARS`` characters a name and
  ``MAX_FORM_CHARS`` characters in all; ``form_fields`` gives each field as the person is shown it, one line each with
  its name uncut, or raises ``Refused`` (walking the schema within its bound, never dumping it);
- an address (``mode: "url"``) must be https (http only to this machine), carry no credentials (userinfo), hold no
  character a browser reads differently from this parser (a backslash, a space, a control or invisible one), and be
  at most ``MAX_URL_CHARS`` characters; ``destination`` gives where it goes, uncut (scheme, host, an IDN host also in
  punycode, port), and the rest of the address cut as text, or raises ``Refused``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .config import is_loopback
from .untrusted import json_within
from .visible import invisible, one_line, quoted, visible

MAX_FIELDS = 50  # of a form: more than a person reads before answering (the spec's forms are short)
MAX_NAME_CHARS = 100  # of a field's name, shown uncut
MAX_FORM_CHARS = 32_768  # of a whole requested schema (strings and numbers counted as written)
MAX_URL_CHARS = 4_096  # of an address a person is asked to open
REST_CHARS = 200  # of the address after its destination, as shown
WORDS_CHARS = 300  # of a field's title or description, as shown
FORMATS = frozenset({"email", "uri", "date", "date-time"})
_COMMON = frozenset({"type", "title", "description", "default"})
# The keys each kind of field may have (MCP 2025-11-25, PrimitiveSchemaDefinition).
_KEYS = {
    "string": _COMMON | {"minLength", "maxLength", "format", "enum", "enumNames", "oneOf"},
    "number": _COMMON | {"minimum", "maximum"},
    "integer": _COMMON | {"minimum", "maximum"},
    "boolean": _COMMON,
    "array": _COMMON | {"minItems", "maxItems", "items"},
}
_LIMITS = ("minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems")


class Refused(ValueError):
    """What a server asked cannot be shown as it is: ``reason``, in the kit's words (it never quotes the value)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Field:
    """One field of a form, as the person is shown it. ``kind``: string, number, integer, boolean, choice (one of
    ``choices``) or choices (any of them); ``choices`` are (value, title) pairs."""

    name: str
    kind: str
    required: bool
    title: str = ""
    description: str = ""
    has_default: bool = False
    default: Any = None
    choices: tuple[tuple[str, str], ...] = ()
    limits: tuple[tuple[str, Any], ...] = ()
    format: str = ""

    @property
    def shown_kind(self) -> str:
        """Its type in words: ``string (email)``, ``one of 'a', 'b'``, ``any of 'x' (X)``."""
        if self.kind in ("choice", "choices"):
            values = ", ".join(quoted(value) + (f" ({one_line(title, 60)})" if title != value else "")
                               for value, title in self.choices)  # fmt: skip
            return f"{'one' if self.kind == 'choice' else 'any'} of {values}"
        return f"{self.kind} ({self.format})" if self.format else self.kind

    def line(self) -> str:
        """The field on one line: its name uncut, then its title, type, limits, default and whether it is required."""
        parts = [quoted(self.name)]
        if self.title:
            parts.append(f"“{one_line(self.title, WORDS_CHARS)}”")
        said = [self.shown_kind, *(f"{key} {value}" for key, value in self.limits)]
        if self.has_default:
            said.append(f"default {shown_value(self.default)}")
        said.append("required" if self.required else "optional")
        line = f"{' '.join(parts)}: {', '.join(said)}"
        return line + (f" — {one_line(self.description, WORDS_CHARS)}" if self.description else "")


def shown_value(value: Any) -> str:
    """A value that may be sent, exactly as it would go (JSON), its characters visible."""
    return visible(json.dumps(value, ensure_ascii=False))


def defaults(fields: tuple[Field, ...]) -> dict[str, Any]:
    """The values the form starts with: each default, as shown on its field's line."""
    return {field.name: field.default for field in fields if field.has_default}


def form_fields(schema: object) -> tuple[Field, ...]:
    """The fields of a requested schema in MCP's restricted form (see the module's docstring); ``Refused`` says why
    not."""
    if not isinstance(schema, Mapping):
        raise Refused("the requested schema is not an object")
    _check_size(schema)
    if schema.get("type") != "object" or set(schema) - {"type", "properties", "required", "$schema"}:
        raise Refused("the requested schema is not a flat object of fields (type, properties, required)")
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        raise Refused("the requested schema's properties or required are not an object and a list")
    if len(properties) > MAX_FIELDS:
        raise Refused(f"the form has {len(properties)} fields, more than the {MAX_FIELDS} the kit shows")
    if not all(isinstance(name, str) for name in required) or set(required) - set(properties):
        raise Refused("the form requires a field it does not have")
    return tuple(_field(name, spec, name in required) for name, spec in properties.items())


def _check_size(schema: Mapping[str, Any]) -> None:
    """The schema's JSON within ``MAX_FORM_CHARS``, by a walk that stops there (never a dump of the whole)."""
    if len(json_within(schema, MAX_FORM_CHARS)) > MAX_FORM_CHARS:
        raise Refused(f"the requested schema is over {MAX_FORM_CHARS:,} characters")


def _field(name: str, spec: object, required: bool) -> Field:
    if not name or len(name) > MAX_NAME_CHARS:
        raise Refused(f"a field's name is empty or over {MAX_NAME_CHARS} characters")
    if not isinstance(spec, Mapping) or spec.get("type") not in _KEYS:
        raise Refused(f"field {quoted(name)} is not a string, number, integer, boolean or list of choices")
    kind = spec["type"]
    unknown = set(spec) - _KEYS[kind]
    if unknown:
        raise Refused(f"field {quoted(name)} has keys outside MCP's restricted form: {_names(unknown)}")
    title, description = _words(spec, "title", name), _words(spec, "description", name)
    limits = tuple((key, _number(spec[key], name)) for key in _LIMITS if key in spec)
    choices = _choices(spec, name)
    field_kind = kind if not choices else "choices" if kind == "array" else "choice"
    if kind == "array" and not choices:
        raise Refused(f"field {quoted(name)} is a list that is not a list of choices")
    fmt = spec.get("format", "")
    if fmt and fmt not in FORMATS:
        raise Refused(f"field {quoted(name)} has a format outside MCP's restricted form")
    field = Field(name, field_kind, required, title, description, limits=limits, choices=choices, format=fmt)
    if "default" not in spec:
        return field
    if not fits(field, spec["default"]):
        raise Refused(f"field {quoted(name)}'s default is not one of its values")
    return Field(name, field_kind, required, title, description, True, spec["default"], choices, limits, fmt)


def _names(keys: set[str]) -> str:
    return ", ".join(quoted(key) for key in sorted(keys))


def _words(spec: Mapping[str, Any], key: str, name: str) -> str:
    value = spec.get(key, "")
    if not isinstance(value, str):
        raise Refused(f"field {quoted(name)}'s {key} is not text")
    return value


def _number(value: object, name: str) -> float | int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise Refused(f"field {quoted(name)} has a limit that is not a number")
    return value


def _choices(spec: Mapping[str, Any], name: str) -> tuple[tuple[str, str], ...]:
    """The (value, title) pairs of an enum field (single or multiple, titled or not), or ``()``."""
    source: Any = spec.get("items") if spec["type"] == "array" else spec
    if source is None:
        return ()
    if not isinstance(source, Mapping):
        raise Refused(f"field {quoted(name)}'s items are not an object")
    if spec["type"] == "array" and set(source) - {"type", "enum", "anyOf"}:
        raise Refused(f"field {quoted(name)}'s items have keys outside MCP's restricted form")
    if "enum" in source:
        values, titles = source["enum"], source.get("enumNames", source["enum"])
        if not _strings(values) or not _strings(titles) or len(titles) != len(values):
            raise Refused(f"field {quoted(name)}'s choices are not text")
        return tuple(zip(values, titles, strict=True))
    options = source.get("anyOf" if spec["type"] == "array" else "oneOf")
    if options is None:
        return ()
    if not isinstance(options, list) or not all(
        isinstance(option, Mapping) and set(option) == {"const", "title"} and _strings([*option.values()])
        for option in options
    ):
        raise Refused(f"field {quoted(name)}'s titled choices are not const and title texts")
    return tuple((option["const"], option["title"]) for option in options)


def _strings(values: object) -> bool:
    return isinstance(values, list) and bool(values) and all(isinstance(value, str) for value in values)


def fits(field: Field, value: object) -> bool:
    """Whether ``value`` is one the field takes (its type and choices; its limits are the server's to check)."""
    allowed = {choice for choice, _ in field.choices}
    if field.kind == "choice":
        return isinstance(value, str) and value in allowed
    if field.kind == "choices":
        return isinstance(value, list) and all(isinstance(item, str) and item in allowed for item in value)
    if field.kind == "boolean":
        return isinstance(value, bool)
    if field.kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if field.kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return isinstance(value, str)


@dataclass(frozen=True)
class Destination:
    """Where an address goes: ``scheme``, ``host`` as written (lowercased), ``ascii_host`` (its punycode, the same
    for a host that is ASCII), ``port``; ``rest`` is what follows (path, query, fragment), cut to ``REST_CHARS``."""

    scheme: str
    host: str
    ascii_host: str
    port: int
    rest: str

    def origin(self) -> str:
        """``https://host:port``, the punycode beside an IDN host: what the person checks before going."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        punycode = f" (punycode: {self.ascii_host})" if self.ascii_host != self.host else ""
        return f"{self.scheme}://{host}:{self.port}{punycode}"


def destination(url: object) -> Destination:
    """Where ``url`` goes, or ``Refused`` (see the module's docstring)."""
    if not isinstance(url, str) or not url:
        raise Refused("the address is not text")
    if len(url) > MAX_URL_CHARS:
        raise Refused(f"the address is over {MAX_URL_CHARS:,} characters")
    if any(char == "\\" or char.isspace() or invisible(char) for char in url):
        raise Refused("the address holds a backslash, a space or an invisible character, which browsers read apart")
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        raise Refused("the address is not a URL") from None
    if "@" in parts.netloc:
        raise Refused("the address has credentials (userinfo) before its host, which hides where it goes")
    scheme = parts.scheme.lower()
    if not host or "%" in host:
        raise Refused("the address has no host it can be shown by")
    if scheme != "https" and not (scheme == "http" and is_loopback(host)):
        raise Refused("the address is not https (http only to this machine)")
    ascii_host, unicode_host = _host_forms(host)
    rest = url[len(parts.scheme) + 3 + len(parts.netloc) :]  # (after ``scheme://netloc``, as written)
    return Destination(scheme, unicode_host, ascii_host, port or (443 if scheme == "https" else 80), _cut(rest))


def _host_forms(host: str) -> tuple[str, str]:
    """The host's punycode and its Unicode form (IDNA 2008 with UTS #46, as browsers map it)."""
    import idna

    if ":" in host or host.replace(".", "").isdigit():  # an IP address
        return host, host
    try:
        ascii_host = idna.encode(host, uts46=True).decode("ascii")
        return ascii_host, idna.decode(ascii_host)
    except idna.IDNAError:
        raise Refused("the address's host is not a valid host name") from None


def _cut(rest: str) -> str:
    if len(rest) <= REST_CHARS:
        return rest
    return f"{rest[:REST_CHARS]}… (cut at {REST_CHARS} of {len(rest):,} characters)"


__all__ = [
    "MAX_FIELDS",
    "MAX_FORM_CHARS",
    "MAX_NAME_CHARS",
    "MAX_URL_CHARS",
    "Destination",
    "Field",
    "Refused",
    "defaults",
    "destination",
    "fits",
    "form_fields",
    "shown_value",
]
