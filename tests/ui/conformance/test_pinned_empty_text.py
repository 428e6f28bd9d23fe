"""``ui_get_text`` of an empty field is empty, not the field's name (issue 21: an outside
reviewer made it fall back to the name for an empty text without any test noticing). Through the
real server and the real app, on every backend."""

from __future__ import annotations

import pytest

from loopkit_ui.testing import UIServerClient

pytestmark = [pytest.mark.ui, pytest.mark.integration]


def test_the_text_of_an_emptied_field_is_empty(mini_ui: UIServerClient, mini_app: object) -> None:
    before = mini_ui.call("ui_get_text", target="NameInput")
    assert not before.error and before.text == "world", before
    cleared = mini_ui.call("ui_press_keys", keys="ctrl+a BackSpace", target="NameInput")
    assert not cleared.error, cleared
    element = mini_ui.call("ui_get_element", target="NameInput")
    assert element["name"] == "Name", element  # the field has a name ...
    empty = mini_ui.call("ui_get_text", target="NameInput")
    assert not empty.error, empty
    assert empty.text == "", empty  # ... and no text: an empty field reads as empty
    assert empty.structured == {"text": ""}
    typed = mini_ui.call("ui_type_text", target="NameInput", text="Ann")
    assert not typed.error and mini_ui.call("ui_get_text", target="NameInput").text == "Ann"
