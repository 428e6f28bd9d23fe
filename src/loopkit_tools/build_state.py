"""``BuildState``: the code as the last successful build saw it, so a commit of unbuilt code is
refused.

The code is the files under some folders of the workspace (the build's inputs), each by its
content hash. :meth:`BuildState.built` records them when a build that succeeded started;
:meth:`BuildState.changed` lists the files that differ now (changed, added, removed). Before the
first build the recorded state is the code as it was when the run began: a run that changes
nothing commits without building. With a ``state_file`` the record survives the process (a
durable run resumed in a new process still knows what its last build saw).
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["BuildState"]


class BuildState:
    """The code under ``folders`` of ``root`` as last built (see the module docstring)."""

    def __init__(
        self,
        root: Path,
        folders: Sequence[str],
        *,
        exclude: Sequence[str] = (),
        state_file: Path | None = None,
    ) -> None:
        self.root = root
        self.folders = [f.strip("/") for f in folders]
        self.exclude = list(exclude)
        self.state_file = state_file
        self._built: dict[str, str] | None = self._load()

    def snapshot(self) -> dict[str, str]:
        """Every file under the folders (relative path, ``/`` separated) by its content hash;
        a symbolic link by its target, never followed."""
        files: dict[str, str] = {}
        for folder in self.folders:
            top = self.root / folder if folder not in ("", ".") else self.root
            for current, dirs, names in os.walk(top):
                dirs[:] = sorted(d for d in dirs if not self._excluded(d))
                for name in sorted(names):
                    if self._excluded(name):
                        continue
                    path = Path(current) / name
                    relative = path.relative_to(self.root).as_posix()
                    with contextlib.suppress(OSError):  # gone meanwhile: not part of the code
                        files[relative] = _digest(path)
        return files

    def _excluded(self, name: str) -> bool:
        return any(fnmatch.fnmatch(name, pattern) for pattern in self.exclude)

    def _recorded(self) -> dict[str, str]:
        if self._built is None:  # the code as the run found it
            self._built = self.snapshot()
            self._save()
        return self._built

    def start(self) -> None:
        """Record the code as it is now, unless a state file has a record already (call this
        before the run changes anything)."""
        self._recorded()

    def built(self, snapshot: dict[str, str]) -> None:
        """A build that started with the code ``snapshot`` succeeded."""
        self._built = dict(snapshot)
        self._save()

    def changed(self) -> list[str]:
        """The files that differ from what the last successful build saw, sorted."""
        then, now = self._recorded(), self.snapshot()
        return sorted(p for p in then.keys() | now.keys() if then.get(p) != now.get(p))

    def _load(self) -> dict[str, str] | None:
        if self.state_file is None:
            return None
        try:
            data = json.loads(self.state_file.read_text("utf-8"))
        except (OSError, ValueError):
            return None
        files = data.get("built") if isinstance(data, dict) else None
        if not isinstance(files, dict):
            return None
        return {str(k): str(v) for k, v in files.items()}

    def _save(self) -> None:
        if self.state_file is None or self._built is None:
            return
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.state_file.with_name(self.state_file.name + ".tmp")
        temporary.write_text(json.dumps({"built": self._built}, sort_keys=True), "utf-8")
        os.replace(temporary, self.state_file)  # whole or not at all, also when killed


def _digest(path: Path) -> str:
    if path.is_symlink():
        return "link:" + os.readlink(path)
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 16), b""):
            h.update(block)
    return h.hexdigest()
