"""Text input for the AT-SPI backend: typing like a user, in chunks the app can keep up with,
and setting a field's whole text at once (EditableText) when there is too much to type."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from loopkit_ui.backends import atspi_constants as C
from loopkit_ui.backends.atspi_input import parse_keys
from loopkit_ui.backends.atspi_tree import TEXT_ROLES
from loopkit_ui.backends.atspi_windows import AtspiWindows
from loopkit_ui.backends.protocol import ActionResult, Locator, TreeNode, UIError
from loopkit_ui.backends.text_limits import TYPE_CHUNK, refuse_long_text

__all__ = ["AtspiText"]

_CHUNK_WAIT = 10.0  # seconds one chunk may take to arrive in the field

Progress = Callable[[int, int], None]


class AtspiText(AtspiWindows):
    """``type_text`` (chunked) and ``set_text``."""

    def _focus(self, node: TreeNode, label: str) -> None:
        if "focused" in self.reader.states(node.key):
            return
        point = self._center(node, label)
        if point is not None:
            self.input.click(*point)
        else:
            self.reader.call(node.key, C.COMPONENT, "GrabFocus")

        def focused() -> bool:
            return "focused" in self.reader.states(node.key)

        self.monitor.wait_until(focused, timeout=1.0, recheck=0.02)

    def _text_field(self, locator: Locator) -> tuple[TreeNode, str, str]:
        node, label = self._target(locator)
        info = self.reader.element(node.key)
        if info.role not in TEXT_ROLES and "editable" not in info.states:
            raise UIError(
                f"{label} is a {info.role}, not a text field; use set_cell for table cells "
                "or press_keys to send keys to it"
            )
        return node, label, info.text or ""

    def _field_text(self, key: str) -> str:
        return str(self.reader.call(key, C.TEXT, "GetText", "ii", (0, -1))[0])

    def type_text(
        self,
        locator: Locator,
        text: str,
        *,
        clear: bool = True,
        diff: bool = False,
        cancel: threading.Event | None = None,
        progress: Progress | None = None,
    ) -> ActionResult:
        """Focus a text field and type ``text`` like a user (select all first when ``clear``).
        Long texts go in chunks of :data:`TYPE_CHUNK`, each read back before the next, so the
        app is never buried in keystrokes; ``cancel`` stops between chunks (a call that timed
        out), ``progress(typed, total)`` is told after each."""
        refuse_long_text(text)

        def run() -> ActionResult:
            node, label, before = self._text_field(locator)
            expected = text if clear else before + text
            typed = [0]

            def perform() -> str | None:
                self._focus(node, label)
                if clear:
                    self.input.keys(parse_keys("ctrl+a"))
                    if not text:
                        self.input.keys(parse_keys("Delete"))
                base = 0 if clear else len(before)
                for start in range(0, len(text), TYPE_CHUNK):
                    if cancel is not None and cancel.is_set():
                        return f"stopped after {typed[0]:,} of {len(text):,} characters"
                    chunk = text[start : start + TYPE_CHUNK]
                    self.input.type_string(chunk)
                    typed[0] = start + len(chunk)
                    if len(text) > TYPE_CHUNK:
                        want = base + typed[0]

                        def caught_up(want: int = want) -> bool:
                            return len(self._field_text(node.key)) >= want

                        arrived = self.monitor.wait_until(
                            caught_up, timeout=_CHUNK_WAIT, recheck=0.05
                        )
                        if not arrived:
                            return (
                                f"the field stopped taking keystrokes after {typed[0]:,} of "
                                f"{len(text):,} characters"
                            )
                    if progress is not None:
                        progress(typed[0], len(text))
                return None

            def verify() -> tuple[bool, str]:
                actual = self._field_text(node.key)
                shown = (
                    actual if len(actual) <= 200 else f"{actual[:200]}... ({len(actual):,} chars)"
                )
                return actual == expected, f"text is now {shown!r}"

            result = self._act("type_text", label, perform, diff=diff, verify=verify)
            if len(text) > TYPE_CHUNK and result.detail is not None:
                chunks = -(-len(text) // TYPE_CHUNK)
                result.detail = f"typed {typed[0]:,} characters in {chunks} chunks; {result.detail}"
            return result

        return self._guarded(run)

    def set_text(self, locator: Locator, text: str, *, diff: bool = False) -> ActionResult:
        """Replace the field's text at once (AT-SPI EditableText.SetTextContents), then read
        it back; any length, no keystrokes."""

        def run() -> ActionResult:
            node, label, _before = self._text_field(locator)

            def perform() -> str | None:
                start = time.perf_counter()
                ok = self.reader.call(node.key, C.EDITABLE_TEXT, "SetTextContents", "s", (text,))
                if not ok or not ok[0]:
                    waited = (time.perf_counter() - start) * 1000
                    return f"{label} refused the text (read-only?) after {waited:.0f} ms"
                return None

            def verify() -> tuple[bool, str]:
                actual = self._field_text(node.key)
                return actual == text, f"text is now {len(actual):,} characters long"

            return self._act("set_text", label, perform, diff=diff, verify=verify)

        return self._guarded(run)
