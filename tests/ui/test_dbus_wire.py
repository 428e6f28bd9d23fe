"""The D-Bus wire format: our marshalling matches GLib's byte for byte, and parses back."""

from __future__ import annotations

import pytest

from loopkit_ui.backends.dbus_wire import (
    METHOD_CALL,
    MethodTemplate,
    Variant,
    build_message,
    marshal,
    parse_message,
    split_signature,
)
from tests.installed import import_or_unavailable

CASES = [
    ("s", ("hello",)),
    ("au", ([1, 2, 3],)),
    ("a(so)", ([(":1.2", "/a/b"), (":1.3", "/c")],)),
    ("(aiia{ss}iaiiasib)uib", (([], 1, {"a": "b"}, 1, [3, 4], 1, ["x"], 1, False), 0, 7, True)),
    ("iis", (1, -2, "x")),
    ("ybnqxtd", (1, True, -3, 4, -5, 6, 1.5)),
    ("a(iisi)", ([(1, 2, "ab", 3)],)),
    ("aay", ([[1, 2], [3]],)),
    ("a{si}", ({"one": 1, "two": 2},)),
]


def test_split_signature() -> None:
    assert split_signature("sa{sv}(ii)au") == ["s", "a{sv}", "(ii)", "au"]
    with pytest.raises(ValueError, match="invalid D-Bus signature"):
        split_signature("sz")


@pytest.mark.parametrize(("signature", "values"), CASES)
def test_roundtrip(signature: str, values: tuple[object, ...]) -> None:
    data = build_message(2, 9, reply_serial=4, signature=signature, body=values)
    parsed = parse_message(data)
    assert parsed is not None
    message, length = parsed
    assert length == len(data)
    assert message.reply_serial == 4
    assert message.body == values
    # Incomplete input is "not yet", not an error.
    assert parse_message(data[:-1]) is None


@pytest.mark.parametrize(("signature", "values"), CASES)
def test_body_matches_glib(signature: str, values: tuple[object, ...]) -> None:
    gi = import_or_unavailable("gi", install="the ui extra (PyGObject)")
    gi.require_version("Gio", "2.0")
    from gi.repository import Gio, GLib

    message = Gio.DBusMessage.new_method_call(":1.5", "/x", "a.b", "C")
    message.set_body(GLib.Variant(f"({signature})", values))
    message.set_serial(9)
    blob = message.to_blob(Gio.DBusCapabilityFlags.NONE)
    assert blob.endswith(marshal(signature, values))
    parsed = parse_message(blob)
    assert parsed is not None and parsed[0].body == values


def test_variants_marshal_with_their_signature() -> None:
    data = build_message(
        4, 1, path="/p", interface="i.f", member="M", signature="(siiva{sv})",
        body=(("x", 1, 2, Variant("s", "title"), {"k": Variant("au", [5])}),),
    )  # fmt: skip
    parsed = parse_message(data)
    assert parsed is not None
    assert parsed[0].body == (("x", 1, 2, "title", {"k": [5]}),)


def test_template_builds_the_same_message_as_build_message() -> None:
    template = MethodTemplate(":1.2", "org.a11y.atspi.Accessible", "GetChildAtIndex", "i", (3,))
    built = template.build(11, "/org/a11y/atspi/accessible/42")
    parsed = parse_message(built)
    assert parsed is not None
    message = parsed[0]
    assert (message.type, message.serial, message.path) == (
        METHOD_CALL, 11, "/org/a11y/atspi/accessible/42",
    )  # fmt: skip
    assert (message.destination, message.member, message.body) == (
        ":1.2", "GetChildAtIndex", (3,),
    )  # fmt: skip


def test_wrong_number_of_values_is_an_error() -> None:
    with pytest.raises(ValueError, match="needs 2 values, got 1"):
        marshal("si", ("x",))
