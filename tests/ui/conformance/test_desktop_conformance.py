"""Conformance beyond one element: clicks at coordinates on a custom-drawn widget (inside the
app's windows only), scrolling by amount and into view, window management, the clipboard, long
texts (chunked typing, a stated limit, ui_set_text), screenshots cropped to a window, hover
waiting for the tooltip, and a second app on the same desktop.

Same rules as the other suites: every backend passes it unchanged, through the real server.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from loopkit_ui.testing import ToolAnswer, UIServerClient

from .conftest import EXAMPLES_DIR, Platform, wait_until_attached

pytestmark = [pytest.mark.ui, pytest.mark.integration]


def _ok(answer: ToolAnswer) -> ToolAnswer:
    assert not answer.error and answer["success"] is True, answer
    return answer


def _window(ui: UIServerClient, title: str = "Mini App") -> dict[str, object]:
    found = [w for w in ui.call("ui_list_windows")["windows"] if w["title"] == title]
    assert len(found) == 1, found
    return found[0]


def test_click_at_a_custom_drawn_widget(mini_ui: UIServerClient, mini_app: object) -> None:
    canvas = mini_ui.call("ui_get_element", target="Canvas")["bounds"]
    left, top = _window(mini_ui)["bounds"][:2]  # type: ignore[index]
    # Coordinates from the window's corner, as on its screenshot: the canvas's right half.
    x, y = canvas[0] - left + 150, canvas[1] - top + 30
    clicked = _ok(mini_ui.call("ui_click_at", x=x, y=y))
    assert clicked["action"] == "click_at" and "#Canvas" in clicked["detail"], clicked
    assert mini_ui.call("ui_get_text", target="CanvasLabel").text == "Canvas: blue"
    _ok(mini_ui.call("ui_click_at", x=x - 100, y=y, window="Mini App"))
    assert mini_ui.call("ui_get_text", target="CanvasLabel").text == "Canvas: red"
    outside = mini_ui.call("ui_click_at", x=5000, y=y)
    assert outside.error and "outside every window of the app" in outside.text, outside.text
    assert mini_ui.call("ui_get_text", target="CanvasLabel").text == "Canvas: red"


def test_scroll_by_amount_and_into_view(mini_ui: UIServerClient, mini_app: object) -> None:
    assert mini_ui.call("ui_get_element", target="row 90")["visible"] is False
    shown = _ok(mini_ui.call("ui_scroll_into_view", target="row 90"))
    assert shown.data.get("detail", "").startswith("row 90 shows after"), shown
    assert mini_ui.call("ui_get_element", target="row 90")["visible"] is True
    assert mini_ui.call("ui_get_element", target="row 0")["visible"] is False
    _ok(mini_ui.call("ui_scroll", target="LongList", direction="up", amount=50))
    assert mini_ui.call("ui_get_element", target="row 0")["visible"] is True
    assert mini_ui.call("ui_get_element", target="row 90")["visible"] is False


def test_window_management(mini_ui: UIServerClient, mini_app: object) -> None:
    _ok(mini_ui.call("ui_window", action="move", x=40, y=30))
    assert _window(mini_ui)["bounds"][:2] == [40, 30]  # type: ignore[index]
    _ok(mini_ui.call("ui_window", action="resize", window="Mini App", width=720, height=820))
    assert _window(mini_ui)["bounds"][2:] == [720, 820]  # type: ignore[index]
    minimized = _ok(mini_ui.call("ui_window", action="minimize", window="Mini App"))
    assert minimized["detail"].startswith("minimised"), minimized
    assert _window(mini_ui)["minimized"] is True
    restored = _ok(mini_ui.call("ui_window", action="restore", window="Mini App"))
    assert restored["detail"].startswith("shown"), restored
    assert _window(mini_ui)["minimized"] is False
    assert _window(mini_ui)["bounds"] == [40, 30, 720, 820], restored
    _ok(mini_ui.call("ui_window", action="maximize", window="Mini App"))
    assert _window(mini_ui)["bounds"] == [0, 0, 1280, 1024]
    _ok(mini_ui.call("ui_window", action="restore", window="Mini App"))
    assert _window(mini_ui)["bounds"] == [40, 30, 720, 820]
    # Close a window like its title bar's button: the non-modal palette.
    _ok(mini_ui.call("ui_click", target="PaletteButton", expect_appear=["PaletteCloseButton"]))
    closed = _ok(mini_ui.call("ui_window", action="close", window="Palette"))
    assert closed["windows"]["closed"] == ["Palette #PaletteDialog"], closed
    focused = _ok(mini_ui.call("ui_window", action="focus"))
    assert _window(mini_ui)["active"] is True, focused


def test_a_click_beyond_the_screens_edge_uses_the_accessible_action(
    mini_ui: UIServerClient, mini_app: object
) -> None:
    # A window wider than the screen (a long status line did it to the invoice app): a button
    # past the right edge cannot take a synthesized click there, its accessible action can.
    _ok(mini_ui.call("ui_window", action="move", window="Mini App", x=1275, y=30))
    try:
        assert _window(mini_ui)["bounds"][0] == 1275  # type: ignore[index]
        _ok(mini_ui.call("ui_click", target="PaletteButton", expect_appear=["PaletteCloseButton"]))
        _ok(mini_ui.call("ui_window", action="close", window="Palette"))
    finally:
        _ok(mini_ui.call("ui_window", action="move", window="Mini App", x=40, y=30))
        _ok(mini_ui.call("ui_window", action="focus"))


def test_the_clipboard(mini_ui: UIServerClient, mini_app: object) -> None:
    assert not mini_ui.call("ui_set_clipboard", text="pasted text").error
    assert mini_ui.call("ui_get_clipboard").text == "pasted text"
    _ok(mini_ui.call("ui_press_keys", target="NameInput", keys="ctrl+a ctrl+v"))
    assert mini_ui.call("ui_get_text", target="NameInput").text == "pasted text"
    _ok(mini_ui.call("ui_type_text", target="NameInput", text="copied by the app"))
    _ok(mini_ui.call("ui_press_keys", target="NameInput", keys="ctrl+a ctrl+c"))
    assert mini_ui.call("ui_get_clipboard").text == "copied by the app"


def test_long_texts(mini_ui: UIServerClient, mini_app: object) -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(10_000))
    typed = _ok(mini_ui.call("ui_type_text", target="NameInput", text=text))
    assert typed["detail"].startswith("typed 10,000 characters in 40 chunks"), typed["detail"]
    assert len(mini_ui.call("ui_get_text", target="NameInput").text) == 10_000
    # The next call answers at once: no keystrokes are left queued.
    _ok(mini_ui.call("ui_click", target="GreetButton"))
    refused = mini_ui.call("ui_type_text", target="NameInput", text=text + "z")
    assert refused.error and "10,001 characters" in refused.text and "ui_set_text" in refused.text
    whole = "0123456789" * 2_000
    _ok(mini_ui.call("ui_set_text", target="NameInput", text=whole))
    assert mini_ui.call("ui_get_text", target="NameInput").text == whole
    not_a_field = mini_ui.call("ui_set_text", target="GreetButton", text="x")
    assert not_a_field.error and "not a text field" in not_a_field.text


def test_a_screenshot_cropped_to_a_window(
    mini_ui: UIServerClient, mini_app: object, tmp_path: Path
) -> None:
    bounds = _window(mini_ui)["bounds"]
    shot = mini_ui.call("ui_screenshot", window="Mini App", image=True)
    assert not shot.error, shot
    with Image.open(shot["path"]) as picture:
        assert list(picture.size) == bounds[2:], (picture.size, bounds)  # type: ignore[index]
    element = mini_ui.call("ui_screenshot", target="GreetButton")
    button = mini_ui.call("ui_get_element", target="GreetButton")["bounds"]
    with Image.open(element["path"]) as picture:
        assert list(picture.size) == button[2:]


def test_hover_answers_once_the_tooltip_shows(mini_ui: UIServerClient, mini_app: object) -> None:
    _ok(mini_ui.call("ui_click", target="GreetButton"))  # Qt shows tooltips in the active window
    hovered = _ok(mini_ui.call("ui_hover", target="TipButton"))
    assert hovered["windows"]["opened"] == ["tooltip 'Shows a tip'"], hovered
    assert any(line.startswith("+ tool tip 'Shows a tip'") for line in hovered["snapshot"])


@pytest.fixture
def invoice(platform: Platform, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    env = platform.env({"INVOICE_APP_LOG": str(tmp_path / "app.log"),
                        "PYTHONPATH": str(EXAMPLES_DIR)})  # fmt: skip
    proc = platform.spawn([sys.executable, "-m", "invoice_app"], env=env, cwd=EXAMPLES_DIR)
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_second_app(
    mini_ui: UIServerClient, mini_app: subprocess.Popen[bytes], invoice: subprocess.Popen[bytes]
) -> None:
    wait_until_attached(mini_ui, mini_app, "GreetButton", "the mini app")
    attached = mini_ui.call("ui_attach_app", app_name="invoice_app")
    for _ in range(50):
        if not attached.error:
            break
        attached = mini_ui.call("ui_attach_app", app_name="invoice_app")
    assert not attached.error, attached
    assert attached["current"] == "invoice_app" and attached["attached"] == ["mini_app",
                                                                             "invoice_app"]  # fmt: skip
    pids = {app["pid"] for app in attached["running"]}
    assert {mini_app.pid, invoice.pid} <= pids, attached
    wait_until_attached(mini_ui, invoice, "AddItemButton", "the invoice app")
    assert mini_ui.call("ui_get_text", target="TotalLabel").text == "Total: 250.00"
    snap = mini_ui.call("ui_snapshot").structured
    add = next(line for line in snap["lines"] if "#AddItemButton" in line).split("[ref=")[1][:-1]
    # Back to the mini app; a ref of the invoice app still acts on the invoice app.
    assert mini_ui.call("ui_attach_app", app_name="mini_app")["current"] == "mini_app"
    _ok(mini_ui.call("ui_click", target=add))
    assert mini_ui.call("ui_get_text", target="GreetingLabel").text == "Hello?"
    # The other app's windows are visible from here (a dialog of another process would be too).
    everything = mini_ui.call("ui_list_windows", all_apps=True)["windows"]
    others = [w for w in everything if w.get("app")]
    assert [w["title"] for w in others] == ["Invoice Editor"], everything
    assert [w["title"] for w in everything if not w.get("app")] == ["Mini App"]


def test_a_dialog_of_another_process_is_visible(
    mini_ui: UIServerClient, mini_app: subprocess.Popen[bytes]
) -> None:
    """A crash reporter the app starts as a separate process: listed with its app among all
    the desktop's windows, and reachable by attaching to it."""
    _ok(mini_ui.call("ui_click", target="ReportButton"))
    deadline = time.monotonic() + 30
    while True:
        windows = mini_ui.call("ui_list_windows", all_apps=True)["windows"]
        found = [w for w in windows if w["title"] == "Crash reporter"]
        if found or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert found and found[0]["app"] == "crash_reporter" and found[0]["is_dialog"], windows
    assert [w["title"] for w in mini_ui.call("ui_list_windows")["windows"]] == ["Mini App"]
    assert mini_ui.call("ui_attach_app", app_name="crash_reporter")["current"] == "crash_reporter"
    closed = _ok(mini_ui.call("ui_click", target="ReporterOkButton"))
    assert "the application exited" in closed["effect"] or closed["windows"]["closed"], closed
    assert mini_ui.call("ui_attach_app", app_name="mini_app")["current"] == "mini_app"
