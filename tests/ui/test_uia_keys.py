"""The UIA backend's key translation (Windows only: the module is never imported on Linux)."""

from __future__ import annotations

import sys

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "win32", reason="the uia backend is Windows-only")


def test_keys_translate_to_send_keys_syntax() -> None:
    from loopkit_ui.backends.uia import to_send_keys

    assert to_send_keys("ctrl+a Delete") == "{Ctrl}a{Delete}"
    assert to_send_keys("shift+Tab Enter F2") == "{Shift}{Tab}{Enter}{F2}"
    assert to_send_keys("{") == "{{}"


def test_unknown_keys_are_clear_errors() -> None:
    from loopkit_ui.backends.protocol import UIError
    from loopkit_ui.backends.uia import to_send_keys

    with pytest.raises(UIError, match="unknown key 'Nope'"):
        to_send_keys("ctrl+Nope")
    with pytest.raises(UIError, match="unknown modifier"):
        to_send_keys("hyper+a")
