"""``GitCommitter``: commit only the writable folders, with a checked message.

Stages the writable folders (additions, changes and deletions) and commits exactly those paths
(``git commit -- <folders>``), so changes elsewhere, staged or not, stay out of the commit and
stay as they were. Refuses an empty commit and a message whose first line breaks the rule.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loopkit.abstractions import ToolError
from loopkit_tools.processes import run_command


@dataclass
class CommitResult:
    """A commit made by :meth:`GitCommitter.commit`."""

    commit_id: str
    files: list[str]

    def __str__(self) -> str:
        return f"Committed {self.commit_id[:12]} with {len(self.files)} file(s):\n" + "\n".join(
            self.files
        )


class GitCommitter:
    """Commits the ``folders`` of the repository at ``root`` with messages matching ``pattern``."""

    def __init__(
        self,
        root: Path,
        folders: Sequence[str],
        pattern: str,
        *,
        git: Sequence[str] = ("git",),
        author_name: str | None = None,
        author_email: str | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        self.root = root
        self.folders = list(folders)
        self.pattern = pattern
        self._regex = re.compile(pattern)
        self.git = list(git)
        self.timeout_s = timeout_s
        self._config: list[str] = []
        if author_name:
            self._config += ["-c", f"user.name={author_name}"]
        if author_email:
            self._config += ["-c", f"user.email={author_email}"]

    async def _git(self, *args: str) -> tuple[int, str]:
        # --literal-pathspecs: folder names are paths, never pathspec magic.
        argv = [*self.git, "--literal-pathspecs", *self._config, *args]
        env = {"GIT_TERMINAL_PROMPT": "0", "GIT_EDITOR": "true", "LC_ALL": "C"}
        result = await run_command(argv, cwd=self.root, env=env, timeout_s=self.timeout_s)
        if result.timed_out:
            raise ToolError(f"git {args[0]} did not finish within {self.timeout_s:g} s")
        return result.exit_code or 0, result.output.strip()

    def check_message(self, message: str) -> str:
        """The message, or a :class:`ToolError` saying what the first line must look like."""
        if not isinstance(message, str) or not message.strip():
            raise ToolError(
                f"the commit message is empty; its first line must match {self.pattern!r}"
            )
        first = message.strip().splitlines()[0]
        if not self._regex.match(first):
            raise ToolError(
                f"the first line of the commit message, {first[:120]!r}, does not match "
                f"{self.pattern!r}; nothing was committed"
            )
        return message.strip() + "\n"

    async def commit(self, message: str) -> CommitResult:
        """Stage the folders, refuse if nothing changed there, commit only them."""
        text = self.check_message(message)
        where = ", ".join(f"{f}/" for f in self.folders)
        code, out = await self._git("add", "--all", "--", *self.folders)
        if code != 0:
            raise ToolError(f"git add failed (exit {code}): {out[-1500:]}")
        code, _ = await self._git("diff", "--cached", "--quiet", "--", *self.folders)
        if code == 0:
            raise ToolError(
                f"nothing to commit: there are no changes under {where} (only these folders are "
                "ever committed); write your change first"
            )
        msg_file = self.root / ".git" / "LOOPKIT_COMMIT_MSG"
        code, out = await self._git("rev-parse", "--git-path", "LOOPKIT_COMMIT_MSG")
        if code == 0 and out:
            msg_file = self.root / out.splitlines()[-1]
        msg_file.write_text(text, encoding="utf-8")
        try:
            code, out = await self._git(
                "commit", "--quiet", "--no-edit", "--file", os.fspath(msg_file), "--", *self.folders
            )
        finally:
            msg_file.unlink(missing_ok=True)
        if code != 0:
            raise ToolError(f"git commit failed (exit {code}): {out[-1500:]}")
        code, commit_id = await self._git("rev-parse", "HEAD")
        if code != 0:
            raise ToolError(f"git rev-parse HEAD failed: {commit_id[-500:]}")
        code, names = await self._git(
            "diff-tree", "--root", "--no-commit-id", "--name-status", "-r", "HEAD"
        )
        files = [" ".join(line.split("\t")) for line in names.splitlines() if line.strip()]
        return CommitResult(commit_id.strip(), files)
