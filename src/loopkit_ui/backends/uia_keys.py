"""Key names for the Windows backend: our key syntax (``"ctrl+a Delete"``, as the AT-SPI
backend takes it) in ``uiautomation.SendKeys`` syntax (``"{Ctrl}a{Delete}"``). Pure functions,
tested on every platform."""

from __future__ import annotations

from loopkit_ui.backends.protocol import UIError

__all__ = ["escape_keys", "to_send_keys"]

_KEY_NAMES = {
    "enter": "Enter",
    "return": "Enter",
    "tab": "Tab",
    "escape": "Esc",
    "esc": "Esc",
    "backspace": "Back",
    "delete": "Delete",
    "del": "Delete",
    "insert": "Insert",
    "home": "Home",
    "end": "End",
    "left": "Left",
    "up": "Up",
    "right": "Right",
    "down": "Down",
    "pageup": "PageUp",
    "pagedown": "PageDown",
    "space": "Space",
    "menu": "Apps",
}
_MODIFIER_NAMES = {
    "ctrl": "Ctrl",
    "control": "Ctrl",
    "shift": "Shift",
    "alt": "Alt",
    "super": "Win",
    "meta": "Win",
}


def to_send_keys(keys: str) -> str:
    """Our key syntax (``"ctrl+a Delete"``) in ``uiautomation.SendKeys`` syntax
    (``"{Ctrl}a{Delete}"``)."""
    out = []
    if not keys.strip():
        raise UIError("keys is empty: expected e.g. 'Enter', 'ctrl+s' or 'shift+Tab Tab'")
    for chord in keys.split():
        *mods, key = chord.split("+") if chord != "+" else ["+"]
        for mod in mods:
            if mod.lower() not in _MODIFIER_NAMES:
                raise UIError(f"unknown modifier {mod!r} in {chord!r}: expected shift, ctrl, alt")
            out.append("{" + _MODIFIER_NAMES[mod.lower()] + "}")
        lowered = key.lower()
        if lowered in _KEY_NAMES:
            out.append("{" + _KEY_NAMES[lowered] + "}")
        elif lowered[:1] == "f" and lowered[1:].isdigit() and 1 <= int(lowered[1:]) <= 24:
            out.append("{F" + lowered[1:] + "}")
        elif len(key) == 1:
            out.append(escape_keys(key))
        else:
            raise UIError(
                f"unknown key {key!r}: use a single character, F1-F24, or "
                + ", ".join(sorted(_KEY_NAMES))
            )
    return "".join(out)


def escape_keys(text: str) -> str:
    """Literal text for SendKeys: braces are its syntax."""
    return "".join("{" + c + "}" if c in "{}" else c for c in text)
