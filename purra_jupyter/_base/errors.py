"""The one exception class of purra-jupyter.

    Exception
    ├── McpSessionError   connection, configuration, approval and discovery problems
    └── HostCodeError     the host's own code (a scope validator) failed inside a call; never reaches a user:
                          the call settles with ``mcp_host_error`` and this message

Tool failures never raise: they come back as results with an ``error_code``. purra-mcp's
``McpAdapterError`` is translated into ``McpSessionError`` with the same code at the connection seam.
"""

from __future__ import annotations

SHOWN_CHARS = 200  # how much of a server's offending line or error text a message quotes


def shown(text: str) -> str:
    """Server text as a message quotes it: on one line, at most ``SHOWN_CHARS`` characters."""
    text = " ".join(text.split())
    return text[:SHOWN_CHARS] + ("…" if len(text) > SHOWN_CHARS else "")


# A message is shown where frontends make links of URLs, so it points to the server's words instead of holding them.
KEPT_APART = "kept apart from this message and shown as text, as what the server said"
SERVER_TEXT_NOTE = f"What the server said is {KEPT_APART}."
SERVER_SAID_LABEL = "what the server said (its own words, shown as text)"  # over it, wherever it is shown
SERVER_TEXT_CHARS = 2_000  # how much of a server's own error text a result keeps to show


def server_words(text: str) -> str:
    """A server's own error text as a result keeps it to show a person: its lines, at most
    ``SERVER_TEXT_CHARS`` characters."""
    text = text.strip()
    return text[:SERVER_TEXT_CHARS] + ("…" if len(text) > SERVER_TEXT_CHARS else "")


def last_words(text: str, chars: int = SERVER_TEXT_CHARS) -> str:
    """A server's words whose end matters most (its stderr tail ends with the exception that killed it), as a failure
    keeps them: at most ``chars`` characters, the last ones, from the start of a line where one fits; a first line
    says how much was cut from the front. Blank lines around them go; a first line keeps its indentation."""
    text = text.strip("\n").rstrip()
    if len(text) <= chars:
        return text
    kept = text[len(text) - chars + CUT_NOTE_CHARS :]
    start = kept.find("\n") + 1  # (0: the one line is longer than that: its end)
    kept = kept[start:] if 0 < start < len(kept) else kept
    return f"… ({len(text) - len(kept)} earlier characters cut)\n{kept}"


CUT_NOTE_CHARS = 40  # what the first line of ``last_words`` takes of its characters, at most


class McpSessionError(Exception):
    """Raised when a session cannot be configured, opened, used or closed as asked; ``.code`` is stable."""

    def __init__(self, code: str, message: str, *, server_text: str = "") -> None:
        message = " ".join(message.split())  # one line, whatever a server's text held
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.server_text = server_text  # the server's own words (its last stderr lines), kept out of the message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def _render_traceback_(self) -> list[str]:
        # IPython shows this instead of a traceback: a user error is one line.
        return [f"McpSessionError: {self}"]


class HostCodeError(Exception):
    """Raised inside a call when code the host supplied (a scope validator) raises; says which and how."""


def detached(error: McpSessionError) -> McpSessionError:
    """``error`` without the exceptions it was raised from or during: its message and ``server_text`` say what
    happened, scrubbed; the SDK's or httpx's own error may quote a server's words whole."""
    error.__cause__ = error.__context__ = None
    error.__suppress_context__ = True
    return error


def without_groups(error: BaseException) -> BaseException:
    """``error`` with every exception group cut out of its chain (the links that point to one).

    anyio task groups wrap what fails inside them; IPython prints any chain holding a group as a full
    native traceback, bypassing ``_render_traceback_``, so a one-line error would arrive as pages."""
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current.__cause__, BaseExceptionGroup):
            current.__cause__ = None
        if isinstance(current.__context__, BaseExceptionGroup):
            current.__context__ = None
        pending.extend(link for link in (current.__cause__, current.__context__) if link is not None)
    return error
