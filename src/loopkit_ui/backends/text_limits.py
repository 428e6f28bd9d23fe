"""How much text a backend types with the keyboard, and in what steps (both backends)."""

from __future__ import annotations

from loopkit_ui.backends.protocol import UIError

__all__ = ["MAX_TYPED", "TYPE_CHUNK", "refuse_long_text"]

#: ui_type_text refuses longer texts (ui_set_text sets any length at once).
MAX_TYPED = 10_000
#: Characters sent in one keyboard call; the app's field is read back after each.
TYPE_CHUNK = 250


def refuse_long_text(text: str) -> None:
    """Refuse a text longer than :data:`MAX_TYPED`, saying what to do instead."""
    if len(text) > MAX_TYPED:
        raise UIError(
            f"{len(text):,} characters is more than ui_type_text types ({MAX_TYPED:,}, about "
            "10 s of keystrokes): use ui_set_text, which sets a field's whole text at once"
        )
