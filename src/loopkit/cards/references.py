"""Reference files: details a role's agent reads only when it needs them, not in its prompt.

They are Markdown files in a ``reference/`` folder beside the roles (``memory-protocol.md``,
``debugging.md``, ...). :class:`ReferenceShelf` finds them in several folders (the user's first:
a user file overrides a bundled one of the same name) and gives the model one tool,
``read_reference(name)``, whose description lists the names there are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

from loopkit.abstractions.tools import FunctionTool, Tool, ToolError
from loopkit.cards.markdown_folders import MarkdownFolders

__all__ = ["REFERENCE_FOLDER", "ReferenceShelf"]

#: The folder of reference files beside the role files.
REFERENCE_FOLDER = "reference"
_NAME = re.compile(r"[a-z][a-z0-9-]{0,63}")
_MAX_BYTES = 256 * 1024


class ReferenceShelf:
    """The reference files of ``folders`` (each a folder of ``<name>.md`` files), the first
    folder that has a name winning."""

    def __init__(self, folders: Sequence[str | Path]) -> None:
        self._files = MarkdownFolders(folders, _NAME)
        self.folders = self._files.folders

    def names(self) -> list[str]:
        """Every reference's name, sorted."""
        return self._files.names()

    def titles(self) -> dict[str, str]:
        """name -> the file's first heading (or its name)."""
        titles: dict[str, str] = {}
        for name in self.names():
            first = next((x for x in self.read(name).splitlines() if x.strip()), name)
            titles[name] = first.lstrip("# ").strip() or name
        return titles

    def read(self, name: str) -> str:
        """The reference ``name``; a :class:`~loopkit.abstractions.ToolError` naming the
        available ones when there is none of that name."""
        path = self._files.find(name.removesuffix(".md")) if isinstance(name, str) else None
        if path is not None:
            return path.read_bytes()[:_MAX_BYTES].decode("utf-8", errors="replace")
        raise ToolError(
            f"there is no reference {name!r}; the references are: {', '.join(self.names())}"
        )

    def tool(self) -> Tool:
        """``read_reference(name)``: the model's way to the references (their names and titles
        are in its description)."""

        def read_reference(
            name: Annotated[str, "the reference's name, one of those listed"],
        ) -> str:
            return self.read(name)

        listed = "; ".join(f"{n} ({t})" for n, t in self.titles().items()) or "none"
        return FunctionTool(
            read_reference,
            name="read_reference",
            description="Reads a reference file: details you read only when you need them. "
            f"Available: {listed}.",
        )
