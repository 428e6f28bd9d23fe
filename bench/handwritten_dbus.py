"""The hand-written D-Bus wire format and client the AT-SPI backend used before jeepney, loaded
from git history, so the snapshot benchmark can compare both in one run.

``load(commit)`` extracts ``dbus_wire.py``, ``dbus_client.py`` and ``atspi_tree.py`` as they were
at ``commit`` into a temporary package (imports rewritten to point at each other) and returns
that package's tree-reader module. Returns None outside a git checkout.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
# The last commit with the hand-written wire format (main before issue 14).
HANDWRITTEN_COMMIT = "40f95e8"
_PACKAGE = "handwritten_dbus_pkg"
_FILES = ("dbus_wire", "dbus_client", "atspi_tree")


def load(commit: str = HANDWRITTEN_COMMIT) -> ModuleType | None:
    """The old ``atspi_tree`` module (its ``TreeReader`` on the old ``DBusClient``), or None."""
    if _PACKAGE in sys.modules:
        return importlib.import_module(f"{_PACKAGE}.atspi_tree")
    folder = Path(tempfile.mkdtemp(prefix="handwritten-dbus-"))
    package = folder / _PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in _FILES:
        try:
            source = subprocess.run(
                ["git", "show", f"{commit}:src/loopkit_ui/backends/{name}.py"],
                cwd=REPO, capture_output=True, text=True, check=True, timeout=30,
            ).stdout  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            return None
        for other in _FILES:
            source = source.replace(f"loopkit_ui.backends.{other}", f"{_PACKAGE}.{other}")
        (package / f"{name}.py").write_text(source)
    sys.path.insert(0, str(folder))
    return importlib.import_module(f"{_PACKAGE}.atspi_tree")
