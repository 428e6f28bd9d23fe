"""Work done once per message of a conversation, not once per request.

A provider turns every message into its wire format (and a scripted model counts its
characters) on every request, and every request of a tool loop carries the whole history: done
naively, the cost of a request grows with the conversation, and a run's cost with its square.
:class:`HistoryCache` keeps the value computed for each message and, for the next request of the
same conversation, computes only the messages that are new.

What makes a kept value safe to reuse (a kept value is used only for the same object, whose
content is verified not to have changed since):

- **the same message objects in the same order.** A request is matched to a conversation by its
  first message (the same object) and then by the longest run of the very same objects seen
  before (an identity test made in C). A message replaced by another object (compaction, a
  session reloaded, a fork of the conversation, an equal copy) is computed again from there on;
- **no change in place since.** Messages and contents stamp every in-place change (a field
  assigned, a ``contents`` list edited: :func:`~loopkit.abstractions.content.edit_count`); when
  the stamp has moved since a conversation's values were kept, they are all computed again;
- **no change inside a call's arguments.** A dict nested in a field (a call's ``arguments``) can
  be changed without any stamp: each one is kept beside a copy made when its message was
  computed, and compared with it on every request (one comparison in C); from the first message
  whose arguments differ, values are computed again.

"""

from __future__ import annotations

import copy
import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from loopkit.abstractions.content import ChatMessage, FunctionCallContent, edit_count

__all__ = ["CachedHistory", "HistoryCache"]

T = TypeVar("T")
A = TypeVar("A")

#: Conversations kept per cache (the most recently used ones).
DEFAULT_MAX_CONVERSATIONS = 16


class CachedHistory(Generic[T]):
    """One conversation as last seen: its messages and the value of each.

    ``values[i]`` belongs to ``messages[i]``; ``reused`` says how many came from earlier requests.
    Both lists belong to the cache: read them, never change them.
    """

    __slots__ = (
        "_folds",
        "edits",
        "messages",
        "owners",
        "reused",
        "snapshots",
        "values",
        "watched",
    )

    def __init__(self, messages: list[ChatMessage], values: list[T], edits: int) -> None:
        self.messages = messages
        self.values = values
        self.edits = edits
        self.reused = 0
        # The mutable values nested in the messages (call arguments), a copy of each as it was
        # when its message was computed, and the index of that message.
        self.watched: list[Any] = []
        self.snapshots: list[Any] = []
        self.owners: list[int] = []
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

    def first_changed(self) -> int:
        """The index of the first message whose nested values changed since it was computed
        (``len(messages)`` when none did)."""
        if self.watched == self.snapshots:  # the usual case: one comparison in C
            return len(self.messages)
        for live, kept, owner in zip(self.watched, self.snapshots, self.owners, strict=True):
            if live != kept:
                return owner
        return len(self.messages)  # pragma: no cover - a value that is not equal to itself

    def prefix(self, same: int, edits: int) -> CachedHistory[T]:
        """A new conversation holding this one's first ``same`` messages and values."""
        made = CachedHistory(self.messages[:same], self.values[:same], edits)
        keep = sum(1 for owner in self.owners if owner < same)  # owners ascend
        made.watched = self.watched[:keep]
        made.snapshots = self.snapshots[:keep]
        made.owners = self.owners[:keep]
        return made

    def watch(self, index: int, message: ChatMessage) -> None:
        """Keep a copy of the mutable values nested in ``message`` (at ``index``)."""
        for content in message.contents:
            if isinstance(content, FunctionCallContent) and content.arguments:
                self.watched.append(content.arguments)
                self.snapshots.append(_snapshot(content.arguments))
                self.owners.append(index)


def _snapshot(arguments: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``arguments`` that no change to them reaches (shallow when it can be)."""
    if all(isinstance(v, str | int | float | bool | None) for v in arguments.values()):
        return dict(arguments)
    return copy.deepcopy(arguments)


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

    def lookup(self, messages: Sequence[ChatMessage]) -> CachedHistory[T]:
        """The conversation of ``messages`` with a value for each of them, computing only what
        no earlier request left valid."""
        edits = edit_count()  # read first: a change made while computing counts next time
        current = list(messages)
        with self._lock:
            found, same = self._find(current, edits)
            if found is not None:
                same = min(same, found.first_changed())
            if found is not None and same == len(found.messages):
                history = found  # the conversation went on: add the new messages
            elif found is not None:
                history = found.prefix(same, edits)
            else:
                history = CachedHistory([], [], edits)
            history.reused = same
            compute = self._compute
            for i in range(same, len(current)):
                message = current[i]
                history.values.append(compute(i, message))
                history.messages.append(message)
                history.watch(i, message)
            self._remember(history)
            return history

    def _find(self, messages: list[ChatMessage], edits: int) -> tuple[CachedHistory[T] | None, int]:
        """The kept conversation sharing the longest prefix (the same objects) with
        ``messages``, and the length of that prefix."""
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
            if n <= len(messages) and all(map(operator.is_, kept, messages)):  # usual; in C
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
    n = 0
    for x, y in zip(a, b, strict=False):
        if x is not y:
            break
        n += 1
    return n
