"""Parts of an agent's test report: its screenshots cropped to the app's windows, and a note
for each subagent run the agent's run log shows."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

__all__ = ["crop_to_windows", "subagent_notes"]


def crop_to_windows(path: Path) -> None:
    """Crop a screenshot of the whole desktop to the windows on it (the box of what differs from
    the desktop's background, read at its bottom-right corner): the report shows the app, not
    1280x1024 of empty screen. A screenshot that is all window stays as it is."""
    from PIL import Image, ImageChops

    with Image.open(path) as image:
        rgb = image.convert("RGB")
    background = Image.new("RGB", rgb.size, rgb.getpixel((rgb.width - 1, rgb.height - 1)))
    box = ImageChops.difference(rgb, background).getbbox()
    if box is not None and box != (0, 0, rgb.width, rgb.height):
        rgb.crop(box).save(path)


def subagent_notes(run_log: Path) -> list[str]:
    """One report note per subagent run (an agent used as a tool) in ``run_log``: its name, its
    run id, its rounds, tool calls and how it ended (``running`` while it has not)."""
    children: dict[str, dict[str, Any]] = {}
    ends: dict[str, dict[str, Any]] = {}
    with contextlib.suppress(OSError), run_log.open(encoding="utf-8") as lines:
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line still being written
            if not isinstance(event, dict):
                continue
            data: dict[str, Any] = event["data"] if isinstance(event.get("data"), dict) else {}
            if event.get("type") == "child_run" and data.get("child_run_id"):
                children[str(data["child_run_id"])] = data
            elif event.get("type") == "run_end" and event.get("parent_run_id"):
                ends[str(event.get("run_id"))] = data
    notes = []
    for child_id, child in children.items():
        end = ends.get(child_id)
        if end is None:
            how = "running"
        else:
            totals: dict[str, Any] = end["totals"] if isinstance(end.get("totals"), dict) else {}
            how = (
                f"{end.get('status', 'ended')}, {totals.get('rounds', '?')} rounds, "
                f"{totals.get('tool_calls', '?')} tool calls"
            )
        notes.append(
            f"subagent {child.get('name') or child.get('tool')} (tool {child.get('tool')}, "
            f"child run {child_id}): {how}"
        )
    return notes
