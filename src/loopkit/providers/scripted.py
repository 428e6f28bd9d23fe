"""Test doubles shipped as product: a scripted model and a function-driven model.

``ScriptedChatClient`` plays a file of model turns. Before each turn it checks the tool results it
received against what the script expects (strict by default) and says exactly where a run
diverged. It makes a whole agent run repeatable without a model, and is the demo's default model
when no API key is set. ``FunctionChatClient`` lets a Python function write each reply.
"""

from __future__ import annotations

import inspect
import json
import operator
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from loopkit.abstractions.chat import ChatOptions, ChatResponse, ChatResponseUpdate
from loopkit.abstractions.content import (
    ChatMessage,
    ChatRole,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    UsageContent,
    UsageDetails,
)
from loopkit.abstractions.trusted import trusted
from loopkit.errors import ScriptDivergedError, describe_validation_error
from loopkit.providers.history_cache import CachedHistory, HistoryCache


class ResultMatch(BaseModel):
    """What a tool result must look like. All given conditions must hold."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    equals: str | None = None
    contains: list[str] = Field(default_factory=list)
    not_contains: list[str] = Field(default_factory=list)
    regex: str | None = None
    #: Keys/values the result, parsed as JSON, must contain (nested dicts compared as subsets).
    json_subset: dict[str, Any] | None = Field(default=None, alias="json")
    error: bool | None = None

    @model_validator(mode="before")
    @classmethod
    def _contains_as_list(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in ("contains", "not_contains"):
                if isinstance(data.get(key), str):
                    data = {**data, key: [data[key]]}
        return data

    def problems(self, result: FunctionResultContent) -> list[str]:
        """Why ``result`` does not match (empty when it does)."""
        text = result.result
        found: list[str] = []
        if self.error is not None and result.error != self.error:
            found.append(f"expected error={self.error}, got error={result.error}")
        if self.equals is not None and text != self.equals:
            found.append(f"expected exactly {self.equals!r}")
        found += [f"expected it to contain {s!r}" for s in self.contains if s not in text]
        found += [f"expected it not to contain {s!r}" for s in self.not_contains if s in text]
        if self.regex is not None and re.search(self.regex, text) is None:
            found.append(f"expected it to match /{self.regex}/")
        if self.json_subset is not None:
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError:
                found.append("expected a JSON result")
            else:
                found += [f"JSON {p}" for p in _subset_problems(self.json_subset, parsed, "")]
        return found


def _subset_problems(expected: Any, actual: Any, path: str) -> list[str]:
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"at {path or '/'}: expected an object, got {actual!r}"]
        out: list[str] = []
        for k, v in expected.items():
            if k not in actual:
                out.append(f"at {path}/{k}: missing")
            else:
                out += _subset_problems(v, actual[k], f"{path}/{k}")
        return out
    if expected != actual:
        return [f"at {path or '/'}: expected {expected!r}, got {actual!r}"]
    return []


class ScriptedCall(BaseModel):
    """A tool call the scripted model makes."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    #: What this call's result must look like when it comes back (checked before the next turn).
    expect: ResultMatch | None = None


class ScriptedTurn(BaseModel):
    """One model answer: optional text, optional tool calls, optional usage to report."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    text: str = ""
    calls: list[ScriptedCall] = Field(default_factory=list)
    usage: UsageDetails | None = None
    #: Expect this turn to be requested with tools disabled (the loop's final request).
    expect_no_tools: bool = False


class Script(BaseModel):
    """A whole scripted run: the model's turns in order."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    turns: list[ScriptedTurn]
    description: str = ""

    @classmethod
    def load(cls, path: str | Path) -> Script:
        """Read a ``.json`` file (``{"turns": [...]}``) or a ``.jsonl`` file (one turn a line)."""
        p = Path(path)
        try:
            raw = p.read_text(encoding="utf-8")
        except OSError as e:
            raise ValueError(f"cannot read model script {p}: {e.strerror}") from None
        try:
            if p.suffix == ".jsonl":
                turns = [json.loads(line) for line in raw.splitlines() if line.strip()]
                return cls(turns=turns)
            return cls.model_validate_json(raw)
        except (json.JSONDecodeError, ValidationError) as e:
            raise ValueError(
                f"model script {p} is not valid: {describe_validation_error(e)}. Expected "
                "{'turns': [{'text': ..., 'calls': [{'name': ..., 'arguments': {...}, "
                "'expect': {...}}]}]}"
            ) from None


class ScriptedChatClient:
    """Plays a :class:`Script`: turn *n* answers the *n*-th request.

    Strict (the default): every call of the previous turn must have a result in the conversation,
    and each result must match its ``expect``; otherwise :class:`ScriptDivergedError` names the
    turn, the tool and what differed. A request beyond the last turn is an error too.
    Usage is the turn's ``usage`` if given, else estimated from the characters sent (about four
    characters a token).
    """

    def __init__(
        self,
        script: Script | str | Path | Sequence[Mapping[str, Any]],
        *,
        strict: bool = True,
        require_offered: bool = False,
    ) -> None:
        """``script``: a :class:`Script`, the path of a script file, or the turns themselves
        (a list of dicts such as ``{"calls": [{"name": "add", "arguments": {...}}]}`` and
        ``{"text": "RESULT: done"}``). ``require_offered``: a turn may call only tools its
        request offered (as a real model sees only those); a call of another is a
        :class:`ScriptDivergedError`."""
        if isinstance(script, Script):
            self.script = script
        elif isinstance(script, str | Path):
            self.script = Script.load(script)
        else:
            self.script = Script.model_validate({"turns": list(script)})
        self.strict = strict
        self.require_offered = require_offered
        self.position = 0
        self.requests: list[list[ChatMessage]] = []
        # Each message's characters are counted once, not on every request (the estimate of a
        # request's input would otherwise re-read the whole history: quadratic in a run).
        self._chars: HistoryCache[int] = HistoryCache(_message_chars)

    @property
    def finished(self) -> bool:
        return self.position >= len(self.script.turns)

    def _check_results(self, messages: Sequence[ChatMessage], turn_no: int) -> None:
        if turn_no == 0 or not self.strict:
            return
        previous = self.script.turns[turn_no - 1]
        results = _latest_results(
            messages,
            {call.id or f"call_{turn_no}_{i + 1}" for i, call in enumerate(previous.calls)},
        )
        for i, call in enumerate(previous.calls):
            call_id = call.id or f"call_{turn_no}_{i + 1}"
            where = f"turn {turn_no + 1}: result of {call.name} (turn {turn_no}, call {i + 1})"
            result = results.get(call_id)
            if result is None:
                raise ScriptDivergedError(f"{where} is missing from the conversation")
            if call.expect is not None:
                problems = call.expect.problems(result)
                if problems:
                    got = result.result if len(result.result) < 600 else result.result[:600] + "…"
                    raise ScriptDivergedError(f"{where}: {'; '.join(problems)}; got: {got!r}")

    def _next_turn(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None
    ) -> tuple[ScriptedTurn, int]:
        turn_no = self.position
        if turn_no >= len(self.script.turns):
            raise ScriptDivergedError(
                f"request {turn_no + 1}: the script has only {len(self.script.turns)} turns"
            )
        self._check_results(messages, turn_no)
        turn = self.script.turns[turn_no]
        if self.strict and turn.expect_no_tools and options is not None:
            offered = (
                options.tools
                if (options.tool_mode is None or options.tool_mode.kind != "none")
                else []
            )
            if offered:
                raise ScriptDivergedError(
                    f"turn {turn_no + 1}: the script expects a request without tools (the loop's "
                    f"final request), but {len(offered)} tools were offered"
                )
        if self.require_offered:
            self._check_offered(turn, turn_no, options)
        self.position += 1
        self.requests.append(list(messages))
        return turn, turn_no

    @staticmethod
    def _check_offered(turn: ScriptedTurn, turn_no: int, options: ChatOptions | None) -> None:
        if options is None or (options.tool_mode is not None and options.tool_mode.kind == "none"):
            return  # a request without tools (the loop's last): what the loop does with calls
        offered = {t.name for t in options.tools}
        for call in turn.calls:
            if call.name not in offered:
                raise ScriptDivergedError(
                    f"turn {turn_no + 1}: the script calls {call.name}, which this request did "
                    f"not offer (offered: {', '.join(sorted(offered)) or 'no tools'})"
                )

    def _build(
        self, turn: ScriptedTurn, turn_no: int, messages: Sequence[ChatMessage]
    ) -> ChatMessage:
        contents: list[Any] = []
        if turn.text:
            contents.append(TextContent(text=turn.text))
        for i, call in enumerate(turn.calls):
            contents.append(
                FunctionCallContent(
                    call_id=call.id or f"call_{turn_no + 1}_{i + 1}",
                    name=call.name,
                    arguments=dict(call.arguments),
                )
            )
        return ChatMessage(role=ChatRole.ASSISTANT, contents=contents)

    def _usage(
        self, turn: ScriptedTurn, messages: Sequence[ChatMessage], options: ChatOptions | None
    ) -> UsageDetails:
        if turn.usage is not None:
            return turn.usage
        sent = self._chars.read(messages, _sent_chars)
        # The tool schemas go with every request too, as a provider would bill them.
        tools = options.tools if options is not None else []
        sent += sum(len(t.name) + len(t.description) + len(json.dumps(t.parameters)) for t in tools)
        out = len(turn.text) + sum(len(json.dumps(c.arguments)) + len(c.name) for c in turn.calls)
        return UsageDetails(input_tokens=max(1, sent // 4), output_tokens=max(1, out // 4))

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        turn, turn_no = self._next_turn(messages, options)
        message = self._build(turn, turn_no, messages)
        return ChatResponse(
            messages=[message],
            usage=self._usage(turn, messages, options),
            finish_reason="tool_calls" if turn.calls else "stop",
            model_id="scripted",
        )

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        response = await self.get_response(messages, options)
        for content in response.messages[0].contents:
            yield ChatResponseUpdate(role=ChatRole.ASSISTANT, contents=[content])
        usage = response.usage or UsageDetails()
        yield ChatResponseUpdate(
            contents=[UsageContent(usage=usage)], finish_reason=response.finish_reason
        )


def _message_chars(index: int, message: ChatMessage) -> int:
    """The characters of ``message`` that the usage estimate counts (texts, results, arguments
    as JSON)."""
    return sum(
        len(getattr(c, "text", "") or getattr(c, "result", "") or "")
        + len(json.dumps(getattr(c, "arguments", {})))
        for c in message.contents
    )


def _sent_chars(history: CachedHistory[int]) -> int:
    return history.fold("chars", int, operator.add)


def _latest_results(
    messages: Sequence[ChatMessage], call_ids: set[str]
) -> dict[str, FunctionResultContent]:
    """The latest result for each of ``call_ids`` in ``messages``, read from the end back only
    as far as needed (a turn's results are at the end of the history)."""
    found: dict[str, FunctionResultContent] = {}
    for m in reversed(messages):
        for r in reversed(m.contents):
            if isinstance(r, FunctionResultContent) and r.call_id in call_ids:
                found.setdefault(r.call_id, r)
        if len(found) == len(call_ids):
            break
    return found


class FunctionChatClient:
    """A model whose every reply is written by ``fn(messages, options)``.

    ``fn`` (sync or async) returns a :class:`ChatResponse`, a :class:`ChatMessage`, or a string
    (a plain text answer). Handy for unit tests of your own loops and middleware.
    """

    def __init__(self, fn: Callable[..., Any], *, model_id: str = "function") -> None:
        self.fn = fn
        self.model_id = model_id
        self.calls = 0

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        self.calls += 1
        reply = self.fn(messages, options)
        if inspect.isawaitable(reply):
            reply = await reply
        if isinstance(reply, ChatResponse):
            return reply
        if isinstance(reply, str):
            reply = ChatMessage.from_text(ChatRole.ASSISTANT, reply)
        if not isinstance(reply, ChatMessage):
            raise TypeError(
                f"FunctionChatClient: the reply function returned {type(reply).__name__}; "
                "expected ChatResponse, ChatMessage or str"
            )
        return ChatResponse(messages=[reply], model_id=self.model_id, finish_reason="stop")

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        response = await self.get_response(messages, options)
        for m in response.messages:
            # The message was validated already: its update needs no second validation.
            yield trusted(ChatResponseUpdate, _update_values(m.role, list(m.contents)))
        if response.usage:
            yield ChatResponseUpdate(contents=[UsageContent(usage=response.usage)])


def _update_values(role: ChatRole, contents: list[Any]) -> dict[str, Any]:
    return {
        "role": role,
        "contents": contents,
        "finish_reason": None,
        "model_id": None,
        "response_id": None,
        "message_id": None,
    }
