"""Paths as the board and the Slack bot show them: never the server's absolute folders.

An error text or a run's reason often names a file by its absolute path (``card file
/srv/loopkit/cards/x.md: ...``, ``build failed in /srv/loopkit/runs/2026...-x/repo``). What a
person on the board or in Slack reads instead: a card by its file name (relative to the cards
folder), a run's file relative to the runs folder (``runs/2026...-x/repo``), and any other
absolute path as ``…/`` and its last name, which says which file without saying where the
server keeps it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

__all__ = ["PathShortener"]

# An absolute path that starts a word (not the tail of a URL such as sqlite:///x or http://h/x).
_ABSOLUTE = re.compile(r"(?<![\w:/.~-])/(?:[^\s'\"`/()<>]+/)*([^\s'\"`/()<>]+)")


class PathShortener:
    """Rewrites the absolute paths in a text. ``folders`` are ``(folder, prefix, name)``:
    a path under the folder is shown as ``prefix`` + its path inside (``(cards, "", "the cards
    folder")``, ``(runs, "runs/", "the runs folder")``; the longest folder wins), the folder
    itself as ``name``; any other absolute path becomes ``…/`` and its last name."""

    def __init__(self, folders: Iterable[tuple[str | os.PathLike[str], str, str]]) -> None:
        spelled: dict[str, tuple[str, str]] = {}
        for folder, prefix, name in folders:
            for form in (Path(folder).absolute(), Path(folder).resolve()):
                spelled.setdefault(str(form).rstrip("/") + "/", (prefix, name))
        self._folders = sorted(spelled.items(), key=lambda item: -len(item[0]))

    def __call__(self, text: object) -> str:
        if text is None:
            return ""
        return _ABSOLUTE.sub(self._short, str(text))

    def _short(self, match: re.Match[str]) -> str:
        path = match.group(0)
        for folder, (prefix, name) in self._folders:
            if path.startswith(folder):
                return prefix + path[len(folder) :]
            if path + "/" == folder:
                return name
        return f"…/{match.group(1)}"
