"""Work done once per message of a conversation, not once per request.

A provider turns every message into its wire format (and a scripted model counts its
characters) on every request, and every request of a tool loop carries the whole history: done
naively, the cost of a request grows with the conversation, and a run's cost with its square.
:class:`HistoryCache` keeps the value computed for each message and, for the next request of the
same conversation, computes only the messages that are new.

What makes a kept value safe to reuse:

- **the same messages in the same order.** A request is matched to a conversation by its first
  message (the same object) and then by the longest run of messages that are the ones seen
  before (a list comparison made in C: the same object passes in a pointer test; another object
  is compared by value, and an equal one maps the same). A message replaced by a different one,
  removed or inserted (compaction, a fork of the conversation) is computed again from there on;
- **no change in place since.** Messages, contents, a message's ``contents`` list and a call's
  ``arguments`` (with the dicts and lists nested in them) stamp every in-place change
  (:func:`~loopkit.abstractions.watched.edit_count`); when the stamp has moved since a
  conversation's values were kept, they are all computed again. Checking it costs the same at
  round 10 and at round 1,000.

It is bounded: it keeps the ``max_conversations`` most recently used conversations (each holds
its messages and their values, as the caller's own history does). One cache may be used from
several threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from loopkit.abstractions.content import ChatMessage
from loopkit.abstractions.watched import edit_count

__all__ = ["CachedHistory", "HistoryCache"]

T = TypeVar("T")
A = TypeVar("A")
R = TypeVar("R")

#: Conversations kept per cache (the most recently used ones).
DEFAULT_MAX_CONVERSATIONS = 16


class CachedHistory(Generic[T]):
    """One conversation as last seen: its messages and the value of each.

    ``values[i]`` belongs to ``messages[i]``; ``reused`` says how many came from earlier requests.
    Both lists belong to the cache: read them, never change them.
    """

    __slots__ = ("_folds", "edits", "messages", "reused", "values")

    def __init__(self, messages: list[ChatMessage], values: list[T], edits: int) -> None:
        self.messages = messages
        self.values = values
        self.edits = edits
        self.reused = 0
        self._folds: dict[str, list[Any]] = {}

    def fold(self, key: str, initial: Callable[[], A], step: Callable[[A, T], A]) -> A:
        """A running aggregate of :attr:`values` (a flattened list, a sum), kept under ``key``
        and brought up to date with the values added since the last call."""
        entry = self._folds.get(key)
        if entry is None:
            entry = self._folds[key] = [0, initial()]
        covered, acc = entry
        values = self.values
        for i in range(covered, len(values)):
            acc = step(acc, values[i])
        entry[0], entry[1] = len(values), acc
        result: A = acc
        return result


class HistoryCache(Generic[T]):
    """Values of ``compute(index, message)`` for the messages of conversations, each computed
    once while the message stays as it was (see the module docstring for what "as it was"
    means). ``compute`` must depend on the message alone (``index`` is for error messages)."""

    def __init__(
        self,
        compute: Callable[[int, ChatMessage], T],
        *,
        max_conversations: int = DEFAULT_MAX_CONVERSATIONS,
    ) -> None:
        if max_conversations < 1:
            raise ValueError(f"max_conversations must be at least 1, got {max_conversations!r}")
        self._compute = compute
        self.max_conversations = max_conversations
        self._histories: list[CachedHistory[T]] = []  # most recently used first
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """How many conversations are kept."""
        return len(self._histories)

    def read(self, messages: Sequence[ChatMessage], reader: Callable[[CachedHistory[T]], R]) -> R:
        """``reader`` of the conversation of ``messages`` (with a value for each of them,
        computing only what no earlier request left valid), called under the cache's lock: a
        request of the same conversation in another thread cannot add its messages meanwhile.
        ``reader`` returns what the request needs (copied out of the kept lists)."""
        edits = edit_count()  # read first: a change made while computing counts next time
        current = list(messages)
        with self._lock:
            return reader(self._lookup(current, edits))

    def lookup(self, messages: Sequence[ChatMessage]) -> CachedHistory[T]:
        """The conversation of ``messages`` with a value for each of them. Its lists grow with
        the conversation's next request: from several threads, use :meth:`read`."""
        return self.read(messages, lambda history: history)

    def _lookup(self, current: list[ChatMessage], edits: int) -> CachedHistory[T]:
        """(Under the lock.) The conversation of ``current``, brought up to date."""
        found, same = self._find(current, edits)
        if found is not None and same == len(found.messages):
            history = found  # the conversation went on: add the new messages
        else:
            kept = found.values[:same] if found is not None else []
            history = CachedHistory(current[:same], kept, edits)
        history.reused = same
        compute = self._compute
        history.values.extend(compute(i, current[i]) for i in range(same, len(current)))
        history.messages.extend(current[same:])
        self._remember(history)
        return history

    def _find(self, messages: list[ChatMessage], edits: int) -> tuple[CachedHistory[T] | None, int]:
        """The kept conversation sharing the longest prefix with ``messages``, and its length."""
        if not messages:
            return None, 0
        first = messages[0]
        best: CachedHistory[T] | None = None
        best_same = 0
        for history in self._histories:
            kept = history.messages
            if history.edits != edits or not kept or kept[0] is not first:
                continue
            n = len(kept)
            if n <= len(messages) and messages[:n] == kept:  # the usual case, in C
                return history, n
            same = _common_prefix(kept, messages)
            if same > best_same:
                best, best_same = history, same
        return best, best_same

    def _remember(self, history: CachedHistory[T]) -> None:
        histories = self._histories
        for i, kept in enumerate(histories):
            if kept is history:
                if i:
                    del histories[i]
                    histories.insert(0, history)
                return
        histories.insert(0, history)
        # A stale conversation (changed in place since) is no use to anyone: drop those first.
        edits = history.edits
        histories[1:] = [h for h in histories[1:] if h.edits == edits]
        del histories[self.max_conversations :]

    def clear(self) -> None:
        """Forget every conversation."""
        with self._lock:
            self._histories.clear()


def _common_prefix(a: list[ChatMessage], b: list[ChatMessage]) -> int:
    """How many messages from the start are the same objects (or equal ones)."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x is not y and x != y:
            break
        n += 1
    return n
