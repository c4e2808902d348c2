"""What a server asks its client during a call: a message from the client's model (``sampling/createMessage``), the
person's input (``elicitation/create``, a form or an address to visit) and the folders it may work in
(``roots/list``).

Each is answered only when the session was given a way to (``Answers``); the SDK declares a capability only for a
callback it is given, so a session without one declares nothing and the SDK answers the server with an error at
once. Every question and its answer is a row of the session log (the transcript has the messages themselves).

mcp 1.29.1 awaits a request's callback inside its one receive loop: a person's turn there would hold every other
message of the session, the server's withdrawal of its question included. So a question is answered in a task of
its own (``KitClientSession`` hands it to ``QuestionDesk.answer_apart``), and the person's turn holds the
session's deadlines meanwhile.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from .._base import runner
from .._base.config import Scrubber
from .._base.session_log import DETAIL_CHARS, SessionLog
from .._base.visible import one_line
from .._base.wire import ANSWER_FAILED, ANSWER_INVALID, EVENT_ASKED, QUESTION_DECLINED

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


class Declined(Exception):
    """A person (or a handler) declined to answer a question that has no ``decline`` of its own (sampling)."""


@dataclass(frozen=True)
class Answerer:
    """How one kind of question is answered: ``answer(params)`` takes the request's params as JSON and gives the
    result as JSON. ``person``: a person answers (the session's deadlines wait for them; code keeps them)."""

    answer: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
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

    async def answered(params: dict[str, Any]) -> dict[str, Any]:
        if inspect.iscoroutinefunction(answer):
            result = await answer(params)
        else:
            result = await runner.off_loop(answer, params)
        dump = getattr(result, "model_dump", None)
        return cast(dict[str, Any], dump(mode="json", by_alias=True, exclude_none=True) if callable(dump) else result)

    return Answerer(answered)


class QuestionDesk:
    """Answers the questions of one connection's server, logging each (scrubbed, on one line)."""

    def __init__(
        self,
        answers: Answers,
        log: SessionLog,
        scrub: Scrubber,
        persons_turn: Callable[[], AbstractAsyncContextManager[None]],
    ) -> None:
        self.answers = answers
        self._log = log
        self._scrub = scrub
        self._persons_turn = persons_turn
        self._tasks: TaskGroup | None = None
        self._open = 0  # questions being answered now (on the loop)

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

    def answer_apart(self, answer: Callable[[], Awaitable[None]]) -> None:
        """Answer a question in a task of its own (see the module's docstring); what escapes it is logged, never
        the session's end."""

        async def apart() -> None:
            try:
                await answer()
            except Exception as exc:  # (e.g. the answer could not be sent: the session is ending)
                self._log.add(EVENT_ASKED, f"answering failed: {exc.__class__.__name__}")

        assert self._tasks is not None  # (questions come once the session is up)
        self._tasks.start_soon(apart)

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

    def refused(self, method: str) -> None:
        """The server asked what this session does not answer: the SDK refuses it; the log says so."""
        kind = next((kind for kind, name in METHODS.items() if name == method), method)
        self._log.add(EVENT_ASKED, f"{method}: refused, this session answers no {kind} (see pj.connect)")

    async def _sampling(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        from mcp import types

        model = types.CreateMessageResultWithTools if params.tools else types.CreateMessageResult
        return await self._ask(SAMPLING, self.answers.sampling, params, model)

    async def _elicitation(self, context: Any, params: types.ElicitRequestParams) -> Any:
        from mcp import types

        return await self._ask(ELICITATION, self.answers.elicitation, params, types.ElicitResult)

    async def _roots(self, context: Any) -> Any:
        from mcp import types

        uris = self.answers.roots or ()
        roots = [types.Root(uri=uri, name=root_name(uri)) for uri in uris]  # type: ignore[arg-type]
        self._log.add(EVENT_ASKED, f"{METHODS[ROOTS]}: answered {len(roots)} root(s): {', '.join(uris)}")
        return types.ListRootsResult(roots=roots)

    async def _ask(self, kind: str, answerer: Answerer | None, params: Any, model: Any) -> Any:
        """One question: the answerer's JSON, checked against the result's model; a failure is an error to the
        server (never the session's end) and a log row with its code."""
        from mcp import types
        from pydantic import ValidationError

        method = METHODS[kind]
        assert answerer is not None  # (a callback exists only for a kind with an answerer)
        request = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        self._log.add(EVENT_ASKED, f"{method}: asked {self._line(request)}")
        if self._open >= QUESTIONS_AT_ONCE:  # a flood: neither a person nor a thread per question
            said = f"{QUESTIONS_AT_ONCE} questions already wait for their answers"
            self._log.add(EVENT_ASKED, f"{method}: {ANSWER_FAILED} refused, {said}")
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"Too many questions at once: {said}.")
        self._open += 1
        try:
            if answerer.person:
                async with self._persons_turn():
                    answer = await answerer.answer(request)
            else:
                answer = await answerer.answer(request)
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
        return one_line(self._scrub(json.dumps(value, ensure_ascii=False)), DETAIL_CHARS)


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
    "Declined",
    "QuestionDesk",
    "code_answerer",
    "root_name",
]
