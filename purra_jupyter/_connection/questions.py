"""What a server asks its client during a call: a message from the client's model (``sampling/createMessage``), the
person's input (``elicitation/create``, a form or an address to visit) and the folders it may work in
(``roots/list``).

Each is answered only when the session was given a way to (``Answers``); the SDK declares a capability only for a
callback it is given, so a session without one declares nothing and the SDK answers the server with an error at
once. Every question and its answer is a row of the session log (the transcript has the messages themselves).

Consent is exact (``QuestionDesk.receive``, before anything is shown or built): a sampling or elicitation request is
answered only while a call of this session runs (over HTTP, and in memory, the call whose request it came with; over
stdio, which ties nothing, the calls running now), and reaches only the person or function answering for that call;
a method the session's protocol does not have is refused as unknown; a form outside MCP's restricted form and an
address that hides where it goes are refused (``_base.consent``). A refusal is an answer to the server at once and a
coded log row.

mcp 1.29.1 awaits a request's callback inside its one receive loop: a person's turn there would hold every other
message of the session, the server's withdrawal of its question included. So a question is answered in a task of
its own (``answer_apart``), and the person's turn holds the session's deadlines meanwhile. A withdrawal
(``notifications/cancelled`` for an open question) ends that question alone: the SDK cancels its task and answers
the server, the person is told (``Asking.withdrawn``), the log says so, and the session goes on.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import anyio

from .._base import runner
from .._base.config import Scrubber
from .._base.consent import Destination, Field, Refused, destination, form_fields
from .._base.session_log import DETAIL_CHARS, SessionLog
from .._base.untrusted import json_within
from .._base.visible import one_line, quoted
from .._base.wire import (
    ANSWER_FAILED,
    ANSWER_INVALID,
    EVENT_ASKED,
    QUESTION_DECLINED,
    QUESTION_REFUSED,
    QUESTION_WITHDRAWN,
)
from .._transports.base import RequestId
from .tracking import CancelToken

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from mcp import types

SAMPLING = "sampling"
ELICITATION = "elicitation"
ROOTS = "roots"
# What each question's method is, as the log and the refusals name it.
METHODS = {SAMPLING: "sampling/createMessage", ELICITATION: "elicitation/create", ROOTS: "roots/list"}
# The most questions of one server answered at once (a person sees at most these; a function runs at most these
# threads); one more is refused at once, so a server that floods questions gets errors, not a wall of widgets.
QUESTIONS_AT_ONCE = 3
USER_REJECTED = -1  # the JSON-RPC code the spec gives a person's refusal of a sampling request
# The protocol a question first came in: a session of an older one refuses it as unknown (its server cannot mean it).
SINCE = {METHODS[ELICITATION]: "2025-06-18"}
URL_SINCE = "2025-11-25"  # an elicitation of an address (``mode: "url"``), and sampling with tools
ENTER_SECONDS = 5.0  # how long the receive loop waits for a question's task to take it (see ``answer_apart``)


class Declined(Exception):
    """A person (or a handler) declined to answer a question that has no ``decline`` of its own (sampling)."""


@dataclass(frozen=True)
class Asking:
    """Who asks, in which call, and what was read of the question before anyone sees it: ``calls`` are the tokens of
    the calls it belongs to (one, but over stdio every call of the session running now), where a person is asked;
    ``fields`` a form's fields, ``destination`` where an address goes. ``withdrawn`` is set when the server withdraws
    the question (from the loop): whoever answers sends nothing after that."""

    server: str
    calls: tuple[CancelToken, ...]
    fields: tuple[Field, ...] = ()
    destination: Destination | None = None
    withdrawn: threading.Event = field(default_factory=threading.Event)

    @property
    def call(self) -> str:
        """The call, as a heading names it: ``its call of 'search'`` (or ``one of its running calls: ...``)."""
        names = [quoted(token.call or "") for token in self.calls]
        return f"its call of {names[0]}" if len(names) == 1 else f"one of its running calls: {', '.join(names)}"


@dataclass(frozen=True)
class Answerer:
    """How one kind of question is answered: ``answer(params, asking)`` takes the request's params as JSON and who
    asks, and gives the result as JSON. ``person``: a person answers (the session's deadlines wait for them; code
    keeps them)."""

    answer: Callable[[dict[str, Any], Asking], Awaitable[dict[str, Any]]]
    person: bool = False


@dataclass
class Answers:
    """The session's ways of answering: ``None`` refuses that kind (and declares no capability). ``roots`` are
    ``file://`` URIs; changed by ``Connection.set_roots`` only."""

    sampling: Answerer | None = None
    elicitation: Answerer | None = None
    roots: tuple[str, ...] | None = None

    def declared(self) -> list[str]:
        """The kinds of question this session answers."""
        present = {SAMPLING: self.sampling, ELICITATION: self.elicitation, ROOTS: self.roots}
        return [kind for kind, way in present.items() if way is not None]


def code_answerer(answer: Callable[[dict[str, Any]], Any]) -> Answerer:
    """A function's way of answering: ``answer(params)`` gives the result as JSON (a dict, or a pydantic model of
    the SDK). A coroutine function runs on the kit's loop; any other in a thread of its own, so that a model
    client that blocks holds neither the loop nor the kernel."""

    async def answered(params: dict[str, Any], asking: Asking) -> dict[str, Any]:
        if inspect.iscoroutinefunction(answer):
            result = await answer(params)
        else:
            result = await runner.off_loop(answer, params)
        dump = getattr(result, "model_dump", None)
        return cast(dict[str, Any], dump(mode="json", by_alias=True, exclude_none=True) if callable(dump) else result)

    return Answerer(answered)


@dataclass(frozen=True)
class Session:
    """What the desk asks of its connection: its ``server`` name, its ``protocol`` (``None`` before ``initialize``),
    the calls a question belongs to (``calls(related)``, see ``RequestTracker.calls_asking``) and the person's turn
    (which holds the session's deadlines)."""

    server: str
    protocol: Callable[[], str | None]
    calls: Callable[[RequestId | None], tuple[CancelToken, ...]]
    persons_turn: Callable[[], AbstractAsyncContextManager[None]]


class QuestionDesk:
    """Answers the questions of one connection's server, logging each (scrubbed, on one line)."""

    def __init__(self, answers: Answers, log: SessionLog, scrub: Scrubber, session: Session) -> None:
        self.answers = answers
        self._log = log
        self._scrub = scrub
        self._session = session
        self._tasks: TaskGroup | None = None
        self._open = 0  # questions being answered now (on the loop)
        self._asking: dict[RequestId, Asking] = {}  # questions admitted, until their task takes them
        self._taken: dict[RequestId, anyio.Event] = {}  # set once a question's task took it (see ``answer_apart``)

    def start(self, tasks: TaskGroup) -> None:
        """The session is up: questions are answered in tasks of ``tasks`` (which end with the session)."""
        self._tasks = tasks

    def answering(self) -> str:
        """Who answers what the server may ask, in a line (e.g. ``sampling: a person; elicitation: refused``)."""
        answers = self.answers
        ways = {SAMPLING: answers.sampling, ELICITATION: answers.elicitation}
        said = [f"{kind}: {_who(way)}" for kind, way in ways.items()]
        roots = "refused" if answers.roots is None else f"{len(answers.roots)} folder(s)"
        return "; ".join([*said, f"roots: {roots}"])

    def methods(self) -> dict[str, bool]:
        """Each question's method, and whether this session answers it."""
        present = set(self.answers.declared())
        return {method: kind in present for kind, method in METHODS.items()}

    async def receive(self, responder: Any, answer: Callable[[], Awaitable[None]]) -> bool:
        """Take a request of the server's that this desk answers (``answer()`` is the SDK's answering of it, which
        calls back here); ``False`` leaves it to the SDK (not a question, or one this session refuses: the SDK says
        it is not supported). A question that consent refuses is answered here, at once."""
        from mcp import types

        root = responder.request.root
        method = str(getattr(root, "method", ""))
        answered = self.methods().get(method)
        if not answered:
            if answered is False:
                self._refused_kind(method)
            return False
        try:
            asking = self._admitted(method, root.params, responder.message_metadata)
        except _Unknown as unknown:  # as the JSON-RPC error of a method the client does not have
            error = types.ErrorData(code=types.METHOD_NOT_FOUND, message="Method not found")
            await self._refuse(responder, method, unknown.reason, error)
            return True
        except Refused as refused:
            error = types.ErrorData(code=types.INVALID_REQUEST, message=f"Refused by the client: {refused.reason}.")
            await self._refuse(responder, method, refused.reason, error)
            return True
        except _Declined as declined:
            decline = types.ClientResult(types.ElicitResult(action="decline"))
            await self._refuse(responder, method, f"{declined.reason}; declined", decline)
            return True
        if asking is not None:
            self._asking[responder.request_id] = asking
        await self._answer_apart(responder, answer)
        return True

    def _admitted(self, method: str, params: Any, metadata: Any) -> Asking | None:
        """Who asks and in which call, or why the question is refused (``Refused``; ``_Declined`` for an address
        that is declined)."""
        protocol = self._session.protocol() or "9999"  # (before initialize answered: the newest)
        if protocol < SINCE.get(method, ""):
            raise _Unknown(f"unknown method: {method} is not part of the session's protocol {protocol}")
        if method == METHODS[ROOTS]:
            return None
        mode = getattr(params, "mode", None)
        if (mode == "url" or getattr(params, "tools", None)) and protocol < URL_SINCE:
            what = "an address to visit" if mode == "url" else "sampling with tools"
            raise _Unknown(f"unknown method: {what} is not part of the session's protocol {protocol}")
        calls = self._session.calls(getattr(metadata, "related_request_id", None))
        if not calls:
            raise Refused("no call of this session is running: a question is answered only during a call of its own")
        server = self._session.server
        if method != METHODS[ELICITATION]:
            return Asking(server, calls)
        if mode == "url":
            try:
                return Asking(server, calls, destination=destination(params.url))
            except Refused as refused:
                raise _Declined(refused.reason) from None
        return Asking(server, calls, fields=form_fields(params.requestedSchema))

    async def _refuse(self, responder: Any, method: str, reason: str, answer: Any) -> None:
        self._log.add(EVENT_ASKED, f"{method}: {QUESTION_REFUSED} {reason}")
        with responder:
            await responder.respond(answer)

    async def _answer_apart(self, responder: Any, answer: Callable[[], Awaitable[None]]) -> None:
        """Answer a question in a task of its own (see the module's docstring): what escapes it is logged, never the
        session's end. The receive loop waits until the task took the question (the SDK can withdraw only a question
        taken; mcp 1.29.1 lets that cancellation escape the task: it ends here)."""
        request_id = responder.request_id
        taken = self._taken[request_id] = anyio.Event()

        async def apart() -> None:
            try:
                await answer()
            except anyio.get_cancelled_exc_class():
                if not responder.cancelled:  # the session's end
                    raise
                self._withdrawn(responder)
            except Exception as exc:  # (e.g. the answer could not be sent: the session is ending)
                self._log.add(EVENT_ASKED, f"answering failed: {exc.__class__.__name__}")
            finally:
                self._took(request_id)
                self._asking.pop(request_id, None)

        assert self._tasks is not None  # (questions come once the session is up)
        self._tasks.start_soon(apart)
        with anyio.move_on_after(ENTER_SECONDS):
            await taken.wait()

    def withdrawing(self, request_id: RequestId) -> None:
        """The server withdraws ``request_id`` (its ``notifications/cancelled`` is about to reach the SDK, which ends
        the question and answers the server): whoever answers knows it before the server hears anything."""
        asking = self._asking.get(request_id)
        if asking is not None:
            asking.withdrawn.set()

    def _took(self, request_id: RequestId) -> None:
        taken = self._taken.pop(request_id, None)
        if taken is not None:
            taken.set()

    def _withdrawn(self, responder: Any) -> None:
        """The SDK ended a withdrawn question (whoever answers knew it first: ``withdrawing``): the log says so."""
        method = str(getattr(responder.request.root, "method", ""))
        self._log.add(EVENT_ASKED, f"{method}: {QUESTION_WITHDRAWN} by the server before it was answered; nothing "
                      "was sent, the session goes on")  # fmt: skip

    def callbacks(self) -> dict[str, Any]:
        """The SDK's ``ClientSession`` callbacks for the kinds this session answers (only those: the SDK declares
        a capability for each callback it is given)."""
        given: dict[str, Any] = {}
        if self.answers.sampling is not None:
            given["sampling_callback"] = self._sampling
        if self.answers.elicitation is not None:
            given["elicitation_callback"] = self._elicitation
        if self.answers.roots is not None:
            given["list_roots_callback"] = self._roots
        return given

    def _refused_kind(self, method: str) -> None:
        """The server asked what this session does not answer: the SDK refuses it; the log says so."""
        kind = next((kind for kind, name in METHODS.items() if name == method), method)
        self._log.add(EVENT_ASKED, f"{method}: refused, this session answers no {kind} (see pj.connect)")

    async def _sampling(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        from mcp import types

        model = types.CreateMessageResultWithTools if params.tools else types.CreateMessageResult
        return await self._ask(SAMPLING, context.request_id, params, model)

    async def _elicitation(self, context: Any, params: types.ElicitRequestParams) -> Any:
        from mcp import types

        return await self._ask(ELICITATION, context.request_id, params, types.ElicitResult)

    async def _roots(self, context: Any) -> Any:
        from mcp import types

        self._took(context.request_id)
        uris = self.answers.roots or ()
        roots = [types.Root(uri=uri, name=root_name(uri)) for uri in uris]  # type: ignore[arg-type]
        self._log.add(EVENT_ASKED, f"{METHODS[ROOTS]}: answered {len(roots)} root(s): {', '.join(uris)}")
        return types.ListRootsResult(roots=roots)

    async def _ask(self, kind: str, request_id: RequestId, params: Any, model: Any) -> Any:
        """One question: the answerer's JSON, checked against the result's model; a failure is an error to the
        server (never the session's end) and a log row with its code."""
        from mcp import types
        from pydantic import ValidationError

        self._took(request_id)
        method = METHODS[kind]
        answerer = self.answers.sampling if kind == SAMPLING else self.answers.elicitation
        asking = self._asking.get(request_id)
        assert answerer is not None and asking is not None  # (a callback only for a kind answered, once admitted)
        request = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        self._log.add(EVENT_ASKED, f"{method}: asked {self._line(request)}")
        if self._open >= QUESTIONS_AT_ONCE:  # a flood: neither a person nor a thread per question
            said = f"{QUESTIONS_AT_ONCE} questions already wait for their answers"
            self._log.add(EVENT_ASKED, f"{method}: {ANSWER_FAILED} refused, {said}")
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"Too many questions at once: {said}.")
        self._open += 1
        try:
            if answerer.person:
                async with self._session.persons_turn():
                    answer = await answerer.answer(request, asking)
            else:
                answer = await answerer.answer(request, asking)
        except Declined as declined:
            self._log.add(EVENT_ASKED, f"{method}: {QUESTION_DECLINED} {self._scrub(str(declined))}")
            return types.ErrorData(code=USER_REJECTED, message=f"The client declined: {declined}")
        except Exception as exc:
            detail = self._scrub(f"{exc.__class__.__name__}: {exc}")
            self._log.add(EVENT_ASKED, f"{method}: {ANSWER_FAILED} the {kind} handler raised {detail}")
            return types.ErrorData(code=types.INTERNAL_ERROR, message=f"The client's {kind} handler failed.")
        finally:
            self._open -= 1
        try:
            result = model.model_validate(answer)
        except ValidationError as invalid:
            where = ", ".join(".".join(map(str, error["loc"])) or "(root)" for error in invalid.errors()[:3])
            said = f"{ANSWER_INVALID} the {kind} handler's answer is not valid at {where}"
            self._log.add(EVENT_ASKED, f"{method}: {said}")
            return types.ErrorData(code=types.INTERNAL_ERROR, message=f"The client's {kind} answer was not valid.")
        shown = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        self._log.add(EVENT_ASKED, f"{method}: answered {self._line(shown)}")
        return result

    def _line(self, value: Any) -> str:
        """``value`` on a log row: a walk that stops where the row does (a secret across the cut read whole)."""
        return one_line(self._scrub(json_within(value, DETAIL_CHARS + self._scrub.longest)), DETAIL_CHARS)


class _Unknown(Refused):
    """A method (or a mode of one) the session's protocol does not have: refused as a client that does not know it."""


class _Declined(Exception):
    """An address a person is not shown: the server gets "decline" (``reason`` says why, for the log)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _who(way: Answerer | None) -> str:
    return "refused" if way is None else "a person" if way.person else "a function"


def root_name(uri: str) -> str:
    """A root's name: its last path segment (what a person recognises), or the URI itself for ``file:///``."""
    from urllib.parse import unquote, urlsplit

    return unquote(urlsplit(uri).path.rstrip("/").rsplit("/", 1)[-1]) or uri


__all__ = [
    "ELICITATION",
    "METHODS",
    "QUESTIONS_AT_ONCE",
    "ROOTS",
    "SAMPLING",
    "USER_REJECTED",
    "Answerer",
    "Answers",
    "Asking",
    "Declined",
    "QuestionDesk",
    "Session",
    "code_answerer",
    "root_name",
]
