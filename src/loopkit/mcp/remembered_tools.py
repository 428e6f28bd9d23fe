"""A stdio MCP server's tool list, remembered between runs for the same server code.

A Python MCP server takes most of a second to start (it imports the SDK and registers its
tools); a run that waits for its tool list before its first model request pays that second
first. The list is the same from one start to the next as long as the server's code and its
command line are: :class:`RememberedToolList` keeps it in a small JSON file named by a
fingerprint of both (the command, the Python files of the packages it names with their sizes
and modification times), so a run can offer the tools at once and reach the server only when it
calls one. :class:`~loopkit.cards.early_source.EarlyToolSource` uses it that way and compares
the list with the server's own when it answers (a difference updates the file and the tools).

The folder is ``$LOOPKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/loopkit``, else
``~/.cache/loopkit`` (``mcp-tool-lists/`` inside it). Nothing here imports the ``mcp`` SDK.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["RememberedToolList", "ToolEntry", "cache_folder"]

#: One tool as remembered: its server-side name, description, input schema and title.
ToolEntry = dict[str, Any]

_FORMAT = 1
#: Packages whose code shapes every Python server's tool list (the SDK and its schemas).
_SDK_PACKAGES = ("mcp", "mcp_types", "pydantic")


def cache_folder() -> Path:
    """Where loopkit keeps what it remembers between runs (see the module docstring)."""
    given = os.environ.get("LOOPKIT_CACHE_DIR")
    if given:
        return Path(given)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "loopkit"


def _package_files(name: str, *, whole: bool = True) -> Iterable[tuple[str, int, int]]:
    """(path, size, mtime in ns) of every ``.py`` file of the top-level package ``name``,
    found without importing it; nothing for a name that is not an installed package. Not
    ``whole``: its folder and ``__init__.py`` only (an installed package's files change only
    when it is reinstalled, which rewrites both)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return
    if spec is None:
        return
    roots = list(spec.submodule_search_locations or [])
    if not roots and spec.origin:
        roots = [spec.origin]
    if not whole:
        for root in roots:
            for path in (Path(root), Path(root) / "__init__.py"):
                with contextlib.suppress(OSError):
                    st = path.stat()
                    yield str(path), st.st_size, st.st_mtime_ns
        return
    stack = [Path(r) for r in roots]
    while stack:
        path = stack.pop()
        if path.is_file():
            st = path.stat()
            yield str(path), st.st_size, st.st_mtime_ns
            continue
        with contextlib.suppress(OSError), os.scandir(path) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    stack.append(Path(entry.path))
                elif entry.name.endswith(".py"):
                    st = entry.stat()
                    yield entry.path, st.st_size, st.st_mtime_ns


def python_module_of(command: Sequence[str]) -> str | None:
    """The module of a ``PYTHON -m MODULE ...`` command line run by this interpreter, else None."""
    if len(command) >= 3 and command[1] == "-m" and command[0] == sys.executable:
        return command[2]
    return None


class RememberedToolList:
    """The remembered tool list of one server (one fingerprint): :meth:`recall` and
    :meth:`remember`. Make it with :meth:`for_python_server`."""

    def __init__(self, path: Path) -> None:
        #: The JSON file holding the list.
        self.path = path

    @classmethod
    def for_python_server(
        cls,
        command: Sequence[str],
        *,
        cwd: Path | None = None,
        packages: Sequence[str] = (),
        folder: Path | None = None,
    ) -> RememberedToolList | None:
        """The remembered list of the server ``PYTHON -m MODULE ...`` (this interpreter), keyed
        by the command line, ``cwd``, the Python version and the files of MODULE's package,
        of ``packages`` and of the MCP SDK; None for any other command (its code is unknown)."""
        module = python_module_of(command)
        if module is None:
            return None
        digest = hashlib.sha256()
        digest.update(json.dumps([_FORMAT, list(command), str(cwd or ""), sys.version]).encode())
        names = dict.fromkeys([module.partition(".")[0], *packages, *_SDK_PACKAGES])
        for name in names:
            digest.update(name.encode() + b"\0")
            whole = name not in _SDK_PACKAGES
            for path, size, mtime in sorted(_package_files(name, whole=whole)):
                digest.update(f"{path}\0{size}\0{mtime}\n".encode())
        return cls((folder or cache_folder()) / "mcp-tool-lists" / f"{digest.hexdigest()}.json")

    def recall(self) -> list[ToolEntry] | None:
        """The remembered tools, or None (never seen, or a file that cannot be read as one)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        tools = data.get("tools") if isinstance(data, dict) else None
        if not isinstance(tools, list) or not all(
            isinstance(t, dict) and isinstance(t.get("name"), str) for t in tools
        ):
            return None
        return tools

    def remember(self, tools: Sequence[ToolEntry]) -> None:
        """Keep ``tools`` (written whole or not at all; a folder that cannot be written is left
        alone: the next run just waits for the server)."""
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump({"format": _FORMAT, "tools": list(tools)}, f)
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
