"""``TranscriptRecorder``: record a model's turns into a transcript the scripted model replays.

Run a card (or any agent) once with a real model and this middleware right around the model;
save the transcript; from then on :class:`~loopkit.providers.scripted.ScriptedChatClient` plays
the same run without a key, checking each tool result against what was recorded. It is the
transcript generator that works for any card and any tools, not only the bundled ones.

Place it innermost (the model's own wrapper, inside the function-invocation loop): each of its
requests is then exactly one model turn, as the scripted model counts them.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Literal

from loopkit.abstractions.chat import (
    ChatClient,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    response_from_updates,
)
from loopkit.abstractions.content import ChatMessage, FunctionResultContent, TextContent
from loopkit.middleware.delegating import DelegatingChatClient
from loopkit.providers.scripted import ResultMatch, Script, ScriptedCall, ScriptedTurn
from loopkit.redaction import Redactor

__all__ = ["ExpectMode", "TranscriptRecorder"]

#: What a recorded call expects of its result on replay: ``"error"`` only that it fails or
#: succeeds as it did; ``"first_line"`` also that it contains its first line as recorded (up to
#: ``snippet_chars``); ``"nothing"`` no check at all.
ExpectMode = Literal["error", "first_line", "nothing"]


class TranscriptRecorder(DelegatingChatClient):
    """Records every turn ``inner`` answers: its text, its tool calls (names, arguments, ids),
    its usage, and whether it was the loop's final request without tools. The result of each
    call is read from the next request and becomes the call's ``expect`` (see ``expect``).

    ``expect="error"`` is the default because first lines often hold what changes between runs
    (times, temporary paths); tighten the saved file by hand where a value matters, as the
    bundled transcripts do. Text that looks secret is redacted in the recorded expectations
    (``redactor``, default: secret shapes and the environment's secret values); the model's own
    text and arguments are kept as they were, since replay must send them back unchanged.
    """

    def __init__(
        self,
        inner: ChatClient,
        *,
        expect: ExpectMode = "error",
        description: str = "",
        snippet_chars: int = 200,
        redactor: Redactor | None = None,
    ) -> None:
        super().__init__(inner)
        if expect not in ("error", "first_line", "nothing"):
            raise ValueError(f"expect must be 'error', 'first_line' or 'nothing', got {expect!r}")
        if snippet_chars < 1:
            raise ValueError(f"snippet_chars must be at least 1, got {snippet_chars!r}")
        self.expect: ExpectMode = expect
        self.description = description
        self.snippet_chars = snippet_chars
        self._redactor = redactor or Redactor()
        self.turns: list[ScriptedTurn] = []
        # the previous turn's calls with the ids the model gave them, waiting for their results
        self._pending: list[tuple[ScriptedCall, str]] = []

    # -- recording ---------------------------------------------------------------------------
    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        self._take_results(messages)
        response = await self.inner.get_response(messages, options)
        self._record(response, options)
        return response

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        self._take_results(messages)
        updates: list[ChatResponseUpdate] = []
        async for update in self.inner.get_streaming_response(messages, options):
            updates.append(update)
            yield update
        self._record(response_from_updates(updates), options)

    def _take_results(self, messages: Sequence[ChatMessage]) -> None:
        if not self._pending:
            return
        results: dict[str, FunctionResultContent] = {
            r.call_id: r for m in messages for r in m.function_results
        }
        for call, call_id in self._pending:
            result = results.get(call_id)
            if result is not None and self.expect != "nothing":
                call.expect = self._expectation(result)
        self._pending = []

    def _expectation(self, result: FunctionResultContent) -> ResultMatch:
        match = ResultMatch(error=result.error)
        if self.expect == "first_line":
            lines = result.result.strip().splitlines()
            first = lines[0][: self.snippet_chars] if lines else ""
            if first and self._redactor.redact(first) == first:  # never record a secret
                match.contains = [first]
        return match

    def _record(self, response: ChatResponse, options: ChatOptions | None) -> None:
        text = "".join(
            c.text for m in response.messages for c in m.contents if isinstance(c, TextContent)
        )
        calls = response.function_calls
        turn = ScriptedTurn(
            text=text,
            # The model's call ids too: a later answer may cite them (a card run's
            # record_evidence), and a replay must give the calls the same ids.
            calls=[
                ScriptedCall(name=c.name, arguments=dict(c.arguments), id=c.call_id) for c in calls
            ],
            usage=response.usage,
            expect_no_tools=options is not None and not _offers_tools(options) and not calls,
        )
        self.turns.append(turn)
        self._pending = list(zip(turn.calls, (c.call_id for c in calls), strict=True))

    # -- the result ----------------------------------------------------------------------------
    @property
    def script(self) -> Script:
        """The transcript so far (a copy: recording goes on)."""
        return Script(
            turns=[t.model_copy(deep=True) for t in self.turns], description=self.description
        )

    def save(self, path: str | Path) -> Path:
        """Write the transcript as JSON to ``path`` (replaced atomically) and return the path.
        Play it with ``ScriptedChatClient(path)`` or ``python -m loopkit.demo --transcript``."""
        target = Path(path)
        text = self.script.model_dump_json(indent=1, exclude_defaults=True, by_alias=True)
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text + "\n")
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        return target


def _offers_tools(options: ChatOptions) -> bool:
    if options.tool_mode is not None and options.tool_mode.kind == "none":
        return False
    return bool(options.tools)
