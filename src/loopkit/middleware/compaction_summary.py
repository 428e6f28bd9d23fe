"""The message that stands for a conversation's oldest steps once compaction replaces them: a
model's summary of them (:func:`summarise`), or a note that they were dropped (:func:`drop_note`).
"""

from __future__ import annotations

from collections.abc import Sequence

from loopkit.abstractions.chat import ChatClient, ChatOptions
from loopkit.abstractions.content import ChatMessage, ChatRole, UsageDetails
from loopkit.errors import ProviderError
from loopkit.middleware.compaction_options import CompactionOptions
from loopkit.middleware.conversation_steps import transcript
from loopkit.middleware.token_estimate import CHARS_PER_TOKEN

__all__ = ["SUMMARY_HEADER", "TRANSCRIPT_RESULT_CHARS", "drop_note", "summarise"]

#: In the transcript given to the summariser, each tool result is cut to this many characters
#: (then, if the transcript is still too long, to the second figure).
TRANSCRIPT_RESULT_CHARS = (1000, 200)
#: The header of the message that stands for the summarised (or dropped) oldest steps.
SUMMARY_HEADER = (
    "Summary of the earlier conversation (condensed to save space; the task above and the "
    "latest steps are verbatim):"
)


def drop_note(dropped_steps: int, summary_text: str) -> ChatMessage:
    """The message that stands for the dropped steps (after the earlier summary, if any)."""
    note = (
        f"[{dropped_steps} of the earliest steps of this conversation were removed to "
        "keep the request within the model's context window. Call a tool again for "
        "anything you need from them.]"
    )
    if summary_text:
        return ChatMessage.from_text(ChatRole.USER, f"{SUMMARY_HEADER}\n{summary_text}\n\n{note}")
    return ChatMessage.from_text(ChatRole.USER, note)


async def summarise(
    client: ChatClient,
    options: CompactionOptions,
    previous: str | None,
    part: Sequence[ChatMessage],
    model_id: str | None,
) -> tuple[ChatMessage, str, UsageDetails | None]:
    """Ask ``client`` to summarise ``part`` (the steps to replace) after the ``previous``
    summary; the message that stands for them, its text, and what the request used.
    ``model_id``: the model to ask (None: the client's own). A summariser that answers with no
    text raises :class:`~loopkit.errors.ProviderError`."""
    # The summariser's request must fit its window too: about the target's size at most.
    limit = options.target_at * CHARS_PER_TOKEN
    history = transcript(previous, part, TRANSCRIPT_RESULT_CHARS[0])
    if len(history) > limit:
        history = transcript(previous, part, TRANSCRIPT_RESULT_CHARS[1])
    if len(history) > limit:
        # Cut the oldest messages, never the earlier summary: it holds all that came before.
        earlier = transcript(previous, [], 0)[: limit // 2]
        rest = transcript(None, part, TRANSCRIPT_RESULT_CHARS[1])
        room = max(0, limit - len(earlier))
        history = (earlier + "\n\n" if earlier else "") + (
            "[the beginning is omitted]\n" + rest[-room:]
        )
    request = [
        ChatMessage.from_text(ChatRole.SYSTEM, options.summary_prompt),
        ChatMessage.from_text(ChatRole.USER, history),
    ]
    summary_options = ChatOptions(max_output_tokens=options.summary_max_tokens)
    if model_id:
        summary_options.model_id = model_id
    response = await client.get_response(request, summary_options)
    text = response.text.strip()
    if not text:
        raise ProviderError(
            "the summariser answered with no text", retryable=False, provider="compaction"
        )
    message = ChatMessage.from_text(ChatRole.USER, f"{SUMMARY_HEADER}\n{text}")
    return message, text, response.usage
