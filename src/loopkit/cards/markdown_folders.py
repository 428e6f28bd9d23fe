"""Named Markdown files found in an ordered list of folders, the first folder that has a name
winning: how roles and reference files let a user's own folder override the bundled one."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

__all__ = ["MarkdownFolders"]


class MarkdownFolders:
    """``<name>.md`` files in ``folders`` (the user's own first); a folder that does not exist
    has none. Only names matching ``pattern`` count, so a name never reaches outside a folder."""

    def __init__(self, folders: Sequence[str | Path], pattern: re.Pattern[str]) -> None:
        self.folders = [Path(f) for f in folders]
        self.pattern = pattern

    def names(self) -> list[str]:
        """Every name, sorted."""
        found: set[str] = set()
        for folder in self.folders:
            if folder.is_dir():
                found.update(p.stem for p in folder.glob("*.md") if self.pattern.fullmatch(p.stem))
        return sorted(found)

    def find(self, name: str) -> Path | None:
        """The file of ``name`` in the first folder that has it; None when there is none (or the
        name is not one)."""
        if isinstance(name, str) and self.pattern.fullmatch(name):
            for folder in self.folders:
                candidate = folder / f"{name}.md"
                if candidate.is_file():
                    return candidate
        return None
