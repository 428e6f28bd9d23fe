"""``GitCommitter``: commit only the writable folders, with a checked message, running nothing.

Stages the writable folders (additions, changes and deletions) and commits exactly those paths
(``git commit -- <folders>``), so changes elsewhere, staged or not, stay out of the commit and
stay as they were. Refuses an empty commit and a message whose first line breaks the rule.

Git runs nothing besides itself: no hook (``core.hooksPath`` is the null device and the commit
is ``--no-verify``; hooks set up in configuration are switched off by name), no fsmonitor, no
external diff or text conversion, no clean/smudge filter driver (every driver the repository's
configuration defines is blanked and made optional), no signing program, no automatic gc. The
system and global configuration and attributes are not read (``GIT_CONFIG_NOSYSTEM``,
``GIT_CONFIG_GLOBAL``, ``GIT_ATTR_NOSYSTEM``, ``core.attributesFile``); the author comes from
the configuration given here, else from ``user.name``/``user.email`` as the normal configuration
sets them. Git gets the allowlisted child environment (no key, no ``GIT_*`` of the runner).

The message is checked as git will store it: lines are split at ``\n`` only (what git does), the
first line may hold no control or format character (``\r``, tabs, ``U+2028``, bidi overrides),
the body none but tab, and the text is committed verbatim, exactly as checked.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loopkit.abstractions import ToolError
from loopkit_tools.processes import run_command
from loopkit_tools.safe_git import git_argv, git_variables

# What may not appear in a message line: control characters (Cc), format characters such as
# bidi overrides and zero-width ones (Cf), line and paragraph separators, lone surrogates.
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")


_WHAT = {
    "Cc": "a control character",
    "Cf": "an invisible format character",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
    "Cs": "a lone surrogate",
}


def _first_bad_character(line: str, *, body: bool) -> str | None:
    """``"U+000D (a control character) at position 8"`` for the first character a message line
    may not hold, or None. A body line may hold tabs and format characters other than bidi
    controls (a zero-width joiner inside an emoji, a soft hyphen); the first line neither."""
    for i, ch in enumerate(line):
        category = unicodedata.category(ch)
        if category not in _WHAT:
            continue
        if body and (ch == "\t" or (category == "Cf" and ch not in _BIDI)):
            continue
        return f"U+{ord(ch):04X} ({_WHAT[category]}) at position {i + 1}"
    return None


@dataclass
class CommitResult:
    """A commit made by :meth:`GitCommitter.commit`."""

    commit_id: str
    files: list[str]
    #: The commit existed already (the same message asked for again, nothing new to commit).
    existed: bool = False

    def __str__(self) -> str:
        text = f"Committed {self.commit_id[:12]} with {len(self.files)} file(s):\n" + "\n".join(
            self.files
        )
        if self.existed:
            text += "\n(this commit existed already: nothing new was committed)"
        return text


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
        self.author_name = author_name
        self.author_email = author_email
        self._identity: list[str] | None = None

    async def _git(
        self, *args: str, config: Sequence[str] = (), safe: bool = True
    ) -> tuple[int, str]:
        # One place builds every git loopkit runs (loopkit_tools.safe_git): literal pathspecs,
        # nothing but git runs, the system/global configuration unread unless `safe` is off.
        argv = git_argv(*args, git=self.git, config=config, safe=safe)
        env = git_variables(safe=safe)
        result = await run_command(argv, cwd=self.root, env=env, timeout_s=self.timeout_s)
        if result.timed_out:
            raise ToolError(f"git {args[0]} did not finish within {self.timeout_s:g} s")
        return result.exit_code or 0, result.output.strip()

    async def _author(self) -> list[str]:
        """``-c user.name=... -c user.email=...``: configured, else as the user's git sets them
        (read once, with the global configuration that the commit itself does not read)."""
        if self._identity is None:
            identity = []
            for key, given in (("user.name", self.author_name), ("user.email", self.author_email)):
                value = given
                if not value:
                    code, out = await self._git("config", "--get", key, safe=False)
                    value = out.splitlines()[-1] if code == 0 and out else None
                if value:
                    identity += ["-c", f"{key}={value}"]
            self._identity = identity
        return self._identity

    async def _neutralised(self) -> list[str]:
        """``-c`` options that switch off every filter driver and configured hook by name.

        Filter drivers (``filter.<name>.clean/smudge/process``) run on ``git add`` and
        ``git commit -- <paths>`` for files whose attributes name them; hooks configured as
        ``hook.<name>.command`` (git 2.54+) are not covered by ``core.hooksPath``. Read right
        before each command that could run them.
        """
        code, out = await self._git("config", "--null", "--get-regexp", r"^(filter|hook)\.")
        if code not in (0, 1):  # 1: none defined
            raise ToolError(f"git config failed (exit {code}): {out[-500:]}; nothing was committed")
        options: list[str] = []
        names: set[tuple[str, str]] = set()
        for entry in out.split("\0"):
            key = entry.split("\n", 1)[0]
            section, _, rest = key.partition(".")
            name, _, _variable = rest.rpartition(".")
            if section in ("filter", "hook") and name:
                names.add((section, name))
        for section, name in sorted(names):
            if "=" in name or "\n" in name:
                raise ToolError(
                    f"the repository's git configuration defines a {section} named {name!r}, "
                    "which cannot be switched off; nothing was committed"
                )
            if section == "filter":
                for variable, value in (("clean", ""), ("smudge", ""), ("process", ""),
                                        ("required", "false")):  # fmt: skip
                    options += ["-c", f"filter.{name}.{variable}={value}"]
            else:
                options += ["-c", f"hook.{name}.enabled=false", "-c", f"hook.{name}.command=true"]
        return options

    def check_message(self, message: str) -> str:
        """The message as it will be committed, or a :class:`ToolError` saying what is wrong.

        Lines are split at ``\\n`` only, as git does (``\\r\\n`` counts as ``\\n``); blank lines
        around the text and spaces at line ends are dropped. The first line must match the
        pattern and hold no control or format character; the body may hold tabs but no other
        control character, no line or paragraph separator and no bidi override.
        """
        if not isinstance(message, str) or not message.strip():
            raise ToolError(
                f"the commit message is empty; its first line must match {self.pattern!r}"
            )
        lines = [line.rstrip(" \t") for line in message.replace("\r\n", "\n").split("\n")]
        while lines and not lines[0].strip(" \t"):
            lines.pop(0)
        while lines and not lines[-1].strip(" \t"):
            lines.pop()
        first = lines[0]
        bad = _first_bad_character(first, body=False)
        if bad is not None:
            raise ToolError(
                f"the first line of the commit message, {first[:120]!r}, contains {bad}; it must "
                f"be one plain line matching {self.pattern!r}; nothing was committed"
            )
        if not self._regex.match(first):
            raise ToolError(
                f"the first line of the commit message, {first[:120]!r}, does not match "
                f"{self.pattern!r}; nothing was committed"
            )
        for number, line in enumerate(lines[1:], start=2):
            bad = _first_bad_character(line, body=True)
            if bad is not None:
                raise ToolError(
                    f"line {number} of the commit message contains {bad}; use plain text lines; "
                    "nothing was committed"
                )
        return "\n".join(lines) + "\n"

    async def commit(self, message: str) -> CommitResult:
        """Stage the folders, refuse if nothing changed there, commit only them."""
        text = self.check_message(message)
        where = ", ".join(f"{f}/" for f in self.folders)
        code, out = await self._git(
            "add", "--all", "--", *self.folders, config=await self._neutralised()
        )
        if code != 0:
            raise ToolError(f"git add failed (exit {code}): {out[-1500:]}")
        code, _ = await self._git(
            "diff", "--cached", "--quiet", "--no-ext-diff", "--no-textconv", "--", *self.folders
        )
        if code == 0:
            existing = await self._existing_commit(text)
            if existing is not None:
                return existing
            raise ToolError(
                f"nothing to commit: there are no changes under {where} (only these folders are "
                "ever committed); write your change first"
            )
        # A writable folder git does not know (empty, e.g. notes/ before the first note) would
        # make `git commit -- folder` fail on its pathspec: commit only the folders it knows.
        code, known = await self._git("ls-files", "--cached", "-z", "--", *self.folders)
        tracked = [p for p in known.split("\0") if p] if code == 0 else []
        folders = [
            f for f in self.folders if f in (".", "") or any(p.startswith(f"{f}/") for p in tracked)
        ] or list(self.folders)
        msg_file = self.root / ".git" / "LOOPKIT_COMMIT_MSG"
        code, out = await self._git("rev-parse", "--git-path", "LOOPKIT_COMMIT_MSG")
        if code == 0 and out:
            msg_file = self.root / out.splitlines()[-1]
        msg_file.write_text(text, encoding="utf-8")
        try:
            config = [*await self._author(), *await self._neutralised()]
            code, out = await self._git(
                "commit", "--quiet", "--no-edit", "--no-verify", "--no-gpg-sign",
                "--cleanup=verbatim", "--file", os.fspath(msg_file), "--", *folders,
                config=config,
            )  # fmt: skip
        finally:
            msg_file.unlink(missing_ok=True)
        if code != 0:
            raise ToolError(f"git commit failed (exit {code}): {out[-1500:]}")
        code, commit_id = await self._git("rev-parse", "HEAD")
        if code != 0:
            raise ToolError(f"git rev-parse HEAD failed: {commit_id[-500:]}")
        code, names = await self._git(
            "diff-tree", "--root", "--no-commit-id", "--name-status", "-r", "--no-ext-diff",
            "--no-textconv", "HEAD",
        )  # fmt: skip
        return CommitResult(commit_id.strip(), _name_status(names))

    async def _existing_commit(self, text: str) -> CommitResult | None:
        """HEAD, when nothing is left to commit and HEAD has exactly this message: the same
        commit asked for again (a durable run resumed after its commit was made but before its
        checkpoint), answered with that commit rather than "nothing to commit"."""
        code, head = await self._git("log", "-1", "--format=%H%x00%B", "HEAD")
        commit_id, _, body = head.partition("\0")
        if code != 0 or not commit_id or body.strip() != text.strip():
            return None
        code, names = await self._git(
            "diff-tree", "--root", "--no-commit-id", "--name-status", "-r", "--no-ext-diff",
            "--no-textconv", "HEAD",
        )  # fmt: skip
        return CommitResult(commit_id.strip(), _name_status(names), existed=True)


def _name_status(names: str) -> list[str]:
    """``git diff-tree --name-status`` lines as ``M path``."""
    return [" ".join(line.split("\t")) for line in names.splitlines() if line.strip()]
