"""``import loopkit_tools`` does not import the memory (SQLite, YAML); its names load on use."""

from __future__ import annotations

import json
import subprocess
import sys


def test_the_memory_loads_on_first_use() -> None:
    code = (
        "import json, sys\n"
        "import loopkit_tools\n"
        "before = sorted(m for m in sys.modules if m.startswith('loopkit_tools.memory')\n"
        "    or m in ('sqlite3', 'yaml'))\n"
        "tools = loopkit_tools.MemoryTools\n"
        "after = 'loopkit_tools.memory.tools' in sys.modules\n"
        "print(json.dumps([before, after, tools.__name__]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(out.stdout) == [[], True, "MemoryTools"]
