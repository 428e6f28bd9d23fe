"""Git command lines and environments that run nothing but git, whatever the repository says.

Every git that loopkit runs (the ``git_commit`` tool, the demo's scratch repository, the board's
diff of a run) works in a repository whose ``.git/config`` and ``.git/info/attributes`` code the
model wrote may have changed: that configuration can name programs git would run (an external
diff, a text conversion, an fsmonitor, a pager, hooks, a signing program, a fetch through a
promisor remote). :func:`git_argv` switches every one of them off on the command line, where
``-c`` beats the repository's configuration; :func:`git_environment` is the allowlisted child
environment (:func:`loopkit.child_env.child_environment`: no key, no ``GIT_*`` of the caller) with
the system and global configuration and attributes left unread. :func:`run_git` puts both
together for a synchronous call.

What stays the caller's job: filter drivers (``filter.<name>.clean``/``smudge``/``process``),
which run only when git reads or writes the work tree (``add``, ``commit -- <paths>``,
``checkout``), are blanked by name by :class:`~loopkit_tools.git.GitCommitter`, which reads them
right before each such command. Reading commits (``diff A..B``, ``show``, ``log``) runs none.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from loopkit.child_env import child_environment

__all__ = [
    "DIFF_COMMANDS",
    "SAFE_CONFIG",
    "git_argv",
    "git_environment",
    "git_variables",
    "run_git",
]

#: ``-c`` options of every safe git command: no hook, fsmonitor, attributes file, external
#: diff, signing, automatic maintenance, pager, signature check, submodule recursion or
#: transport (a promisor remote would otherwise fetch, through any protocol, on a missing
#: object).
SAFE_CONFIG: tuple[str, ...] = (
    "-c", f"core.hooksPath={os.devnull}",
    "-c", "core.fsmonitor=false",
    "-c", f"core.attributesFile={os.devnull}",
    "-c", "diff.external=",
    "-c", "commit.gpgSign=false",
    "-c", "tag.gpgSign=false",
    "-c", "log.showSignature=false",
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
    "-c", "core.pager=cat",
    "-c", "submodule.recurse=false",
    "-c", "diff.submodule=short",
    "-c", "protocol.allow=never",
)  # fmt: skip

#: Subcommands that can print a patch: they get ``--no-ext-diff --no-textconv`` (a diff driver's
#: ``command`` or ``textconv`` named by the repository's attributes is a program).
DIFF_COMMANDS = frozenset({"diff", "show", "log", "format-patch", "whatchanged"})

_GIT_VARIABLES = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
    "GIT_SEQUENCE_EDITOR": "true",
    "GIT_PAGER": "cat",
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_PROTOCOL_FROM_USER": "0",
    "LC_ALL": "C",
}


def git_argv(
    *args: str,
    git: Sequence[str] = ("git",),
    config: Sequence[str] = (),
    safe: bool = True,
) -> list[str]:
    """The command line of ``git <args>``: ``--no-pager``, literal pathspecs, then (``safe``)
    :data:`SAFE_CONFIG`, then the caller's own ``config`` (``-c`` pairs), then ``args``; a
    subcommand of :data:`DIFF_COMMANDS` gets ``--no-ext-diff --no-textconv`` right after it.

    ``safe=False`` leaves :data:`SAFE_CONFIG` out: only for reading a setting of the user's own
    configuration (``git config --get user.name``), never for a command that could run one.
    """
    argv = [*git, "--no-pager", "--literal-pathspecs"]
    if safe:
        argv += SAFE_CONFIG
    argv += config
    if args and safe and args[0] in DIFF_COMMANDS:
        return [*argv, args[0], "--no-ext-diff", "--no-textconv", *args[1:]]
    return [*argv, *args]


def git_variables(*, safe: bool = True) -> dict[str, str]:
    """The variables a safe git gets on top of the child environment's allowlist: the system
    and global configuration and attributes unread, no prompt, no editor, no pager, no lazy
    fetch, C locale (its messages are parsed). ``safe=False`` reads the user's configuration
    (for ``git config --get``)."""
    variables = dict(_GIT_VARIABLES)
    if not safe:
        for name in ("GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_ATTR_NOSYSTEM"):
            del variables[name]
    return variables


def git_environment(*, safe: bool = True) -> dict[str, str]:
    """The whole environment of a safe git: the allowlisted child environment (no key, no
    ``GIT_*`` of this process) plus :func:`git_variables`."""
    return child_environment(extra=git_variables(safe=safe))


def run_git(
    repo: str | os.PathLike[str],
    *args: str,
    timeout_s: float = 30.0,
    git: Sequence[str] = ("git",),
    config: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """Run a safe ``git <args>`` in ``repo`` and wait (output as text, undecodable bytes
    replaced). Raises ``OSError`` when git cannot start and ``subprocess.TimeoutExpired`` past
    ``timeout_s``; a failing git is the result's ``returncode``."""
    return subprocess.run(
        git_argv(*args, git=git, config=config),
        cwd=Path(repo),
        env=git_environment(),
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout_s,
        check=False,
        stdin=subprocess.DEVNULL,
    )
