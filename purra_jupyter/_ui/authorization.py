"""The person's turn of an authorization, in the cell that waits for it (``connect``, ``reauthorize``).

A running cell cannot receive a widget's click (DESIGN §9), so nothing here needs one: the address is a link the
person opens, the way back is either the one-shot loopback listener (which runs on the kit's loop) or the
kernel's own input box (``getpass``: the address holds a code, so it is neither echoed nor saved), and
Cancel is sending the box empty (or the kernel's interrupt). What is shown is one output under a display id;
its last state names the server and the authorization server, never the address or anything in it.
"""

from __future__ import annotations

import _thread
import getpass
import threading
import time
from collections.abc import Iterator
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager

from IPython.core.error import StdinNotImplementedError
from IPython.display import clear_output

from .._base.egress import bundle, cell_text
from .._base.markup import ERROR_COLOR, OK_COLOR, WARN_COLOR, tag
from .._base.wire import AUTH_CANCELED, TIMEOUT
from .._transports.oauth import AuthFailed, AuthorizationRequest
from .records import LiveOutput

PROMPT = "Paste the address your browser was sent back to (send it empty to cancel): "
POLL_SECONDS = 0.2  # how often a wait without an input box looks for the kernel's interrupt


def ask(request: AuthorizationRequest) -> str:
    """Show the request, wait for the browser's way back (loopback or pasted), and return that address."""
    view = AuthorizationView(request)
    view.show()
    try:
        redirected = _wait(request, view)
    except AuthFailed as failure:
        view.end(ERROR_COLOR, f"not authorized: {failure.message}")
        raise
    except BaseException:
        view.end(ERROR_COLOR, "not authorized: interrupted")
        raise
    view.end(OK_COLOR, "the browser came back; the kit checks the address and asks for the token")
    return redirected


class AuthorizationView:
    """Which server asks, its authorization server, the address as text with a link to open it (never opened by
    the kit), and how to come back; ``end`` leaves a line without the address."""

    def __init__(self, request: AuthorizationRequest) -> None:
        self.request = request
        self._output = LiveOutput()

    def show(self) -> None:
        self._output.show(self.bundle())

    def end(self, color: str, line: str) -> None:
        """Rewrite the output as its last state (shown again after ``clear_output`` removed a dead input box)."""
        bundle = self._summary(color, line)
        if self._output.shown:
            self._output.update(bundle)
        else:
            self._output.show(bundle)

    def redisplay(self) -> None:
        self._output = LiveOutput()
        self.show()

    def _summary(self, color: str, line: str) -> dict[str, str]:
        request = self.request
        text = f"authorization for '{request.server}' at {request.authorization_server}: {line}"
        html = tag(
            "div",
            "authorization for ",
            tag("b", request.server),
            " at ",
            tag("code", request.authorization_server),
            ": ",
            tag("span", line, class_="purra-authorization-state", style=f"color:{color}"),
            class_="purra-authorization",
            style="text-align:left",
        )
        return bundle(html, cell_text(text))

    def bundle(self) -> dict[str, str]:
        """The view while the person has the browser."""
        request = self.request
        minutes = f"{request.timeout / 60:g} min"
        back = (
            f"When you have approved, the browser comes back to {request.redirect_uri} (a listener on 127.0.0.1 of "
            "the kernel's machine, for this authorization only) and the cell goes on. If the browser runs on "
            "another machine (Binder, JupyterHub), its page then fails to load: copy its address from the address "
            "bar and paste it into the box below."
        )
        text = "\n".join(
            (
                f"Server '{request.server}' asks for authorization at {request.authorization_server}.",
                f"Open this address in your browser (the kit does not open it): {request.url}",
                back,
                f"The wait ends in {minutes}; send the box empty to cancel.",
            )
        )
        server = tag("code", request.authorization_server, class_="purra-authorization-server")
        url_style = "white-space:pre-wrap;overflow-wrap:anywhere;text-align:left"
        open_style = "display:inline-block;padding:2px 10px;border:1px solid;border-radius:3px;text-decoration:none"
        html = tag(
            "div",
            tag("div", "Server ", tag("b", request.server), " asks for authorization at ", server, "."),
            tag("div", "Open this address in your browser (the kit does not open it):"),
            tag("pre", request.url, class_="purra-authorization-url", style=url_style),
            tag(
                "div",
                tag(
                    "a",
                    "Open",
                    class_="purra-authorization-open",
                    href=request.url,
                    target="_blank",
                    rel="noopener noreferrer",
                    style=open_style,
                ),
            ),
            tag("div", back, class_="purra-authorization-back"),
            tag(
                "div",
                f"waiting (at most {minutes}); send the box empty to cancel",
                class_="purra-authorization-state",
                style=f"color:{WARN_COLOR}",
            ),
            class_="purra-authorization",
            style=f"text-align:left;border-left:3px solid {WARN_COLOR};padding:4px 8px",
        )
        return bundle(html, cell_text(text, address=request.url))


def _wait(request: AuthorizationRequest, view: AuthorizationView) -> str:
    """The pasted address, or the listener's: whichever comes first within the request's timeout."""
    ends = time.monotonic() + request.timeout
    wake = _Wake()
    request.loopback.add_done_callback(lambda _: wake.fire())
    timer = threading.Timer(request.timeout, wake.fire)
    timer.daemon = True
    timer.start()
    try:
        pasted = _paste(wake)
        if pasted is not None:
            if not pasted.strip():
                raise AuthFailed(AUTH_CANCELED, "canceled: the box was sent empty")
            return pasted
        if wake.prompted:  # the box is dead now: clear it away, show the view again
            clear_output()
            view.redisplay()
        return request.loopback.result(timeout=max(0.0, ends - time.monotonic()) if not wake.fired else 0)
    except FutureTimeout:
        raise AuthFailed(TIMEOUT, f"no authorization within {request.timeout:g} s") from None
    finally:
        timer.cancel()


def _paste(wake: _Wake) -> str | None:
    """What the person sent in the kernel's input box; ``None`` when the wait was woken (the listener answered,
    time ran out) or the frontend has no input box (then the caller waits for the listener alone)."""
    try:
        with wake.armed() as armed:
            if not armed:
                return None
            return getpass.getpass(PROMPT)
    except KeyboardInterrupt:
        if wake.fired:
            return None
        raise
    except (StdinNotImplementedError, OSError, EOFError):
        wake.prompted = False
        _wait_interruptibly(wake)
        return None


def _wait_interruptibly(wake: _Wake) -> None:
    """Block until woken, in short waits a kernel interrupt can break."""
    while not wake.event.wait(POLL_SECONDS):
        pass


class _Wake:
    """Ends the person's wait from another thread: sets ``event``, and interrupts the input box if it is
    shown (the kernel reads it in a loop that a scheduled interrupt breaks; nothing else is interrupted)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed = False
        self.fired = False
        self.prompted = False
        self.event = threading.Event()

    def fire(self) -> None:
        with self._lock:
            if self.fired:
                return
            self.fired = True
            self.event.set()
            if self._armed:
                _thread.interrupt_main()

    @contextmanager
    def armed(self) -> Iterator[bool]:
        """Whether to show the box (not once woken); while it is shown, ``fire`` interrupts it."""
        with self._lock:
            self._armed = self.prompted = not self.fired
        try:
            yield self._armed
        finally:
            with self._lock:
                self._armed = False


__all__ = ["PROMPT", "AuthorizationView", "ask"]
