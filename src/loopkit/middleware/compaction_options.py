"""``CompactionOptions``: when and how far :class:`~loopkit.middleware.compaction.
CompactionChatClient` compacts a conversation."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_SUMMARY_PROMPT", "CompactionOptions", "CompactionWarning"]


class CompactionWarning(UserWarning):
    """A request goes out above the limit: compaction could not bring it down (the event
    ``compaction`` of the run says why)."""


DEFAULT_SUMMARY_PROMPT = (
    "You condense the working history of an AI agent so that it can continue its task with "
    "less context. Below is the older part of its conversation (and possibly an earlier "
    "summary). Write a summary that the agent will read instead of it: what it did and found "
    "(files, names, values, decisions, errors and how they were resolved), what is still to "
    "be done, and every instruction or constraint the user gave. Keep names, paths and numbers "
    "exact. Do not invent anything and do not address the user. Plain text, as short as "
    "completeness allows."
)


@dataclass(frozen=True, slots=True)
class CompactionOptions:
    """When and how far :class:`~loopkit.middleware.compaction.CompactionChatClient` compacts.

    Give the model's input window as ``max_input_tokens`` (compaction starts above ``trigger``
    of it and goes down to ``target`` of it), or explicit ``trigger_tokens`` (and optionally
    ``target_tokens``, default five eighths of the trigger).
    """

    #: The model's context window for input, in tokens (None: give ``trigger_tokens``).
    max_input_tokens: int | None = None
    #: Compact before a request estimated above this fraction of ``max_input_tokens``.
    trigger: float = 0.8
    #: ...down to this fraction (the low-water mark: a large jump now, none for a while).
    target: float = 0.5
    #: Explicit trigger in tokens (overrides ``trigger``).
    trigger_tokens: int | None = None
    #: Explicit target in tokens (overrides ``target``).
    target_tokens: int | None = None
    #: The latest steps (assistant message with its calls + their results) kept verbatim.
    keep_recent_steps: int = 4
    #: Results shorter than this many characters are not worth a stub and stay.
    min_elide_chars: int = 400
    #: Summarise the oldest steps with a model when eliding is not enough (False: never call
    #: a model).
    summarize: bool = True
    #: When eliding and summarising (not allowed, or failed) still leave a request above
    #: :attr:`limit_at` (``max_input_tokens``, else the trigger), drop the oldest steps down to
    #: the target; a note in their place tells the model how many. False: the request is sent
    #: as it is, and a ``compaction`` event and a :class:`CompactionWarning` say why.
    drop_oldest: bool = True
    #: ``max_output_tokens`` of the summary request (also what the plan reserves for it).
    summary_max_tokens: int = 1000
    #: The summariser's instructions.
    summary_prompt: str = DEFAULT_SUMMARY_PROMPT

    def __post_init__(self) -> None:
        if self.max_input_tokens is None and self.trigger_tokens is None:
            raise ValueError(
                "compaction needs max_input_tokens (the model's input window, e.g. 200000) or "
                "trigger_tokens (compact above this many input tokens); got neither"
            )
        for name in ("max_input_tokens", "trigger_tokens", "target_tokens"):
            value = getattr(self, name)
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value <= 0
            ):
                raise ValueError(f"{name} must be a positive number of tokens, got {value!r}")
        for name in ("trigger", "target"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise TypeError(
                    f"{name} must be a fraction of max_input_tokens (e.g. 0.8), got "
                    f"{type(value).__name__} {value!r}"
                )
        if not 0 < self.target < self.trigger <= 1:
            raise ValueError(
                f"expected 0 < target < trigger <= 1 (fractions of max_input_tokens), got "
                f"target={self.target!r}, trigger={self.trigger!r}"
            )
        if self.target_at >= self.trigger_at:
            raise ValueError(
                f"target_tokens ({self.target_at:,}) must be below trigger_tokens "
                f"({self.trigger_at:,})"
            )
        if self.max_input_tokens is not None and self.trigger_at > self.max_input_tokens:
            raise ValueError(
                f"trigger_tokens ({self.trigger_at:,}) must not exceed max_input_tokens "
                f"({self.max_input_tokens:,})"
            )
        if self.keep_recent_steps < 1:
            raise ValueError(f"keep_recent_steps must be >= 1, got {self.keep_recent_steps}")
        if self.min_elide_chars < 0:
            raise ValueError(f"min_elide_chars must be >= 0, got {self.min_elide_chars}")
        if self.summary_max_tokens < 16:
            raise ValueError(f"summary_max_tokens must be >= 16, got {self.summary_max_tokens}")

    @property
    def limit_at(self) -> int:
        """What no request may exceed: ``max_input_tokens``, else the trigger."""
        return self.max_input_tokens if self.max_input_tokens is not None else self.trigger_at

    def over_limit_reason(self, tokens: int) -> str:
        """What a request of ``tokens`` above :attr:`limit_at` is told: why, and what to do."""
        what = "max_input_tokens" if self.max_input_tokens is not None else "the trigger"
        if self.drop_oldest:
            cause = (
                "what compaction always keeps is that large: the system message, the task (the "
                "first user message), the latest user message, the summary or note in place of "
                "older steps, and the latest step"
            )
            fix = (
                "Shorten the instructions or the task, cut tool results (max_result_chars), or "
                "give the model's real window as max_input_tokens"
            )
        else:
            cause = "eliding and summarising could not do it and drop_oldest is off"
            fix = "Set drop_oldest=True, allow summarize=True, or lower min_elide_chars"
        return (
            f"the request is about {tokens:,} tokens, above {what} ({self.limit_at:,}): "
            f"{cause}. {fix}."
        )

    @property
    def trigger_at(self) -> int:
        """The trigger in tokens."""
        if self.trigger_tokens is not None:
            return self.trigger_tokens
        assert self.max_input_tokens is not None  # checked in __post_init__
        return int(self.max_input_tokens * self.trigger)

    @property
    def target_at(self) -> int:
        """The target (low-water mark) in tokens."""
        if self.target_tokens is not None:
            return self.target_tokens
        if self.max_input_tokens is not None and self.trigger_tokens is None:
            return int(self.max_input_tokens * self.target)
        return int(self.trigger_at * self.target / self.trigger)
