"""The server options of issue 24, through the real server and the mini app: ``--snapshots
full`` answers the whole outline after every action and ``none`` no snapshot at all;
``--screenshot-images`` makes ``ui_screenshot`` answer the PNG as image content (a call's
``image=false`` turns it off again)."""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path
from typing import Any

import pytest

from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.testing import running_app

from .conftest import MINI_APP, PYTHON

pytestmark = [pytest.mark.ui, pytest.mark.integration]


async def _calls(env: dict[str, str], extra: list[str], calls: list[tuple[str, dict[str, Any]]]
                 ) -> list[Any]:  # fmt: skip
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    args = ["-m", "loopkit_ui.server", "--app-name", "mini_app", "--attach-timeout", "20", *extra]
    params = StdioServerParameters(command=PYTHON, args=args, env=env)
    results = []
    async with Client(params) as client:
        for _ in range(100):  # the app may still be starting
            if not (await client.call_tool("ui_get_element", {"target": "GreetButton"})).is_error:
                break
            await asyncio.sleep(0.2)
        for name, arguments in calls:
            results.append(await client.call_tool(name, arguments))
    return results


def test_snapshot_modes_and_screenshot_images(
    headless_desktop: HeadlessDesktop, tmp_path: Path
) -> None:
    env = {**os.environ, **headless_desktop.child_env()}
    clicks = [("ui_click", {"target": "GreetButton"}), ("ui_click", {"target": "GreetButton"})]
    shots = [("ui_screenshot", {"target": "GreetButton"}),
             ("ui_screenshot", {"target": "GreetButton", "image": False})]  # fmt: skip
    with running_app(headless_desktop, [PYTHON, str(MINI_APP)]):
        full = asyncio.run(
            _calls(
                env,
                ["--snapshots", "full", "--screenshot-images", "--output-dir", str(tmp_path / "a")],
                clicks + shots,
            )
        )
        none = asyncio.run(_calls(env, ["--snapshots", "none", "--output-dir",
                                        str(tmp_path / "b")], clicks + shots[:1]))  # fmt: skip
    # full: the whole outline each time, even when nothing changed
    for result in full[:2]:
        lines = result.structured_content["snapshot"]
        assert any("#GreetButton" in line for line in lines) and len(lines) > 20, lines
    images = [b for b in full[2].content if b.type == "image"]
    assert len(images) == 1 and images[0].mime_type == "image/png"
    assert base64.b64decode(images[0].data) == Path(full[2].structured_content["path"]).read_bytes()
    assert not [b for b in full[3].content if b.type == "image"]  # image=false wins
    # none: no snapshot; no image unless asked
    assert all(r.structured_content["snapshot"] is None for r in none[:2])
    assert not [b for b in none[2].content if b.type == "image"]
