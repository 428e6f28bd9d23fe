"""Synthesized mouse and keyboard input through the AT-SPI registry (XTest underneath).

Input lands in the app like a user's (modal dialogs block it, focus moves), about 2 ms after
the call, while Qt's accessible "Press" action animates for about 100 ms before it clicks.
"""

from __future__ import annotations

from loopkit_ui.backends import atspi_constants as C
from loopkit_ui.backends.dbus_client import DBusClient

__all__ = ["InputSynth", "KeyStroke", "parse_keys"]

_MODIFIERS = {"shift": 1, "ctrl": 4, "control": 4, "alt": 8, "super": 64, "meta": 64}
_NAMED_KEYS = {
    "enter": 0xFF0D, "return": 0xFF0D, "tab": 0xFF09, "escape": 0xFF1B, "esc": 0xFF1B,
    "backspace": 0xFF08, "delete": 0xFFFF, "del": 0xFFFF, "insert": 0xFF63, "home": 0xFF50,
    "end": 0xFF57, "left": 0xFF51, "up": 0xFF52, "right": 0xFF53, "down": 0xFF54,
    "pageup": 0xFF55, "pagedown": 0xFF56, "space": 0x20, "menu": 0xFF67,
}  # fmt: skip
_BUTTONS = {"left": 1, "middle": 2, "right": 3}


class KeyStroke:
    """One key with modifiers, e.g. ``ctrl+shift+s``."""

    __slots__ = ("keysym", "mask", "text")

    def __init__(self, keysym: int, mask: int, text: str) -> None:
        self.keysym = keysym
        self.mask = mask
        self.text = text

    def __repr__(self) -> str:
        return f"KeyStroke({self.text!r})"


def _keysym(name: str) -> int:
    lowered = name.lower()
    if lowered in _NAMED_KEYS:
        return _NAMED_KEYS[lowered]
    if (
        len(lowered) >= 2
        and lowered[0] == "f"
        and lowered[1:].isdigit()
        and 1 <= int(lowered[1:]) <= 24
    ):
        return 0xFFBE + int(lowered[1:]) - 1
    if len(name) == 1:
        code = ord(name.lower())
        # X keysyms: Latin-1 maps to itself, the rest of Unicode to 0x01000000 + code point.
        return code if code < 0x100 else 0x01000000 + code
    raise ValueError(
        f"unknown key {name!r}: use a single character, F1-F24, or one of "
        + ", ".join(sorted(_NAMED_KEYS))
    )


def parse_keys(keys: str) -> list[KeyStroke]:
    """``"ctrl+a Delete"`` → two strokes. Modifiers: shift, ctrl, alt, super."""
    strokes = []
    if not keys.strip():
        raise ValueError("keys is empty: expected e.g. 'Enter', 'ctrl+s' or 'shift+Tab Tab'")
    for chord in keys.split():
        parts = chord.split("+") if chord != "+" else ["+"]
        if chord.endswith("++"):
            parts = [*chord[:-2].split("+"), "+"]
        *mods, key = parts
        mask = 0
        for mod in mods:
            if mod.lower() not in _MODIFIERS:
                raise ValueError(
                    f"unknown modifier {mod!r} in {chord!r}: "
                    "expected one of shift, ctrl, alt, super"
                )
            mask |= _MODIFIERS[mod.lower()]
        strokes.append(KeyStroke(_keysym(key), mask, chord))
    return strokes


class InputSynth:
    """Mouse and keyboard input via the registry's DeviceEventController."""

    def __init__(self, client: DBusClient, *, timeout: float = 5.0) -> None:
        self.client = client
        self.timeout = timeout

    def _mouse(self, x: int, y: int, name: str) -> None:
        self.client.call(
            C.REGISTRY, C.DEC_PATH, C.DEC, "GenerateMouseEvent", "iis", (x, y, name),
            timeout=self.timeout,
        )  # fmt: skip

    def _key(self, code: int, text: str, kind: int) -> None:
        self.client.call(
            C.REGISTRY, C.DEC_PATH, C.DEC, "GenerateKeyboardEvent", "isu", (code, text, kind),
            timeout=self.timeout,
        )  # fmt: skip

    def click(self, x: int, y: int, *, button: str = "left", count: int = 1) -> None:
        """Move to ``(x, y)`` and click ``count`` times (2 = a double-click)."""
        number = _BUTTONS[button]
        if count == 2:
            self._mouse(x, y, f"b{number}d")
            return
        for _ in range(count):
            self._mouse(x, y, f"b{number}c")

    def wheel(self, x: int, y: int, button: int) -> None:
        """One wheel notch at ``(x, y)``: X buttons 4 (up), 5 (down), 6 (left), 7 (right)."""
        self._mouse(x, y, f"b{button}c")

    def move(self, x: int, y: int) -> None:
        """Move the pointer to ``(x, y)``."""
        self._mouse(x, y, "abs")

    def press(self, x: int, y: int, button: str = "left") -> None:
        """Move to ``(x, y)`` and press a button (for drag and drop)."""
        self._mouse(x, y, f"b{_BUTTONS[button]}p")

    def release(self, x: int, y: int, button: str = "left") -> None:
        """Move to ``(x, y)`` and release a button."""
        self._mouse(x, y, f"b{_BUTTONS[button]}r")

    def keys(self, strokes: list[KeyStroke]) -> None:
        """Press each stroke (modifiers locked around the key)."""
        for stroke in strokes:
            if stroke.mask:
                self._key(stroke.mask, "", C.KEY_LOCKMODIFIERS)
            try:
                self._key(stroke.keysym, "", C.KEY_SYM)
            finally:
                if stroke.mask:
                    self._key(stroke.mask, "", C.KEY_UNLOCKMODIFIERS)

    def type_string(self, text: str) -> None:
        """Type ``text`` character by character (any Unicode the keymap can produce)."""
        if text:
            self._key(0, text, C.KEY_STRING)
