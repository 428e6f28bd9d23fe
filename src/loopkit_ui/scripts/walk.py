"""Random walks: pick operations from an operations file by seed and write an ordinary script.

An operations file is a script-format file with ``operations`` (each a list of steps that leaves
the app as it found it: add an item then delete it, set a discount then clear it) and optional
``invariants`` (steps that must hold after every operation), ``setup`` and ``teardown``. The
generated script imports the operations file (for its app, oracles, variables and blocks) and
inlines the chosen operations. The same file, seed and count always write the same bytes, so a
crash from a nightly walk is reproduced from its seed.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

from loopkit_ui.scripts.loader import ScriptLoadError, load_script

__all__ = ["generate_walk", "write_walk"]


def generate_walk(
    ops_file: str | Path, seed: int, steps: int = 40, *, output: str | Path | None = None
) -> dict[str, Any]:
    """The walk script as a JSON-ready dict (``output``: where it will be written, so the
    import path is relative to it)."""
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    ops_path = Path(ops_file).resolve()
    loaded = load_script(ops_path)  # validates the whole file first
    if not loaded.script.operations:
        raise ScriptLoadError(ops_path, ["an operations file needs a non-empty 'operations' list"])
    raw = json.loads(ops_path.read_text(encoding="utf-8"))
    operations = raw["operations"]
    weights = [float(op.get("weight", 1.0)) for op in operations]
    # random.Random(int) is Mersenne Twister with a fixed seeding algorithm: the same picks on
    # every Python 3 version and platform.
    rng = random.Random(seed)
    picks = rng.choices(range(len(operations)), weights=weights, k=steps)
    out_dir = Path(output).resolve().parent if output is not None else Path.cwd()
    body: list[dict[str, Any]] = []
    for number, index in enumerate(picks, start=1):
        operation = operations[index]
        body.append(
            {
                "type": "log",
                "message": f"operation {number}/{steps}: {operation['name']}",
            }
        )
        body.extend(operation["steps"])
        body.extend(raw.get("invariants", []))
    script: dict[str, Any] = {
        "name": f"random walk seed {seed} ({steps} operations)",
        "description": (
            f"Generated from {ops_path.name} with seed {seed}: "
            + ", ".join(operations[i]["name"] for i in picks)
        ),
        "imports": [Path(os.path.relpath(ops_path, out_dir)).as_posix()],
        "variables": {"walk_seed": seed},
        "setup": raw.get("setup", []),
        "steps": body,
        "teardown": raw.get("teardown", []),
    }
    schema = raw.get("$schema")
    if isinstance(schema, str):
        if "://" not in schema and not Path(schema).is_absolute():
            # Keep an editor's relative schema link working from the output folder.
            schema = Path(os.path.relpath(ops_path.parent / schema, out_dir)).as_posix()
        script = {"$schema": schema, **script}
    return script


def write_walk(ops_file: str | Path, seed: int, steps: int, output: str | Path) -> Path:
    """Generate a walk and write it to ``output`` (checked by loading it back)."""
    script = generate_walk(ops_file, seed, steps, output=output)
    target = Path(output)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(script, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    load_script(target)
    return target
