"""loopkit_tools: guarded local tools for agent runs (files, build, app process, git).

There is no shell: the model gets ``list_files``, ``read_file``, ``write_file``, ``build_app``,
``start_app``, ``stop_app``, ``git_commit`` (and ``run_tests`` when configured), each checked by
the :class:`WorkspaceGuard`. See docs/tools.md and docs/security.md. The agent's memory (notes,
search, feedback rules, glossary) is :class:`MemoryTools` (docs/memory.md); the id fixer, a
subagent with the file tools only that adds missing accessible ids, is :class:`IdFixer`
(docs/roles.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopkit_tools.condense import condense, relevant_lines
from loopkit_tools.config import ReadyCheck, ToolsConfig, WindowCheck
from loopkit_tools.git import CommitResult, GitCommitter
from loopkit_tools.local_tools import LocalTools
from loopkit_tools.paging import page_lines
from loopkit_tools.processes import CommandResult, ProcessGroup, group_alive, pid_alive, run_command
from loopkit_tools.safe_git import git_argv, git_environment, run_git
from loopkit_tools.workspace import PathRefusedError, WorkspaceGuard

__all__ = [
    "CommandResult",
    "CommitResult",
    "FeedbackRules",
    "GitCommitter",
    "Glossary",
    "GlossaryFiles",
    "IdFixer",
    "LocalTools",
    "MemoryTools",
    "Note",
    "NoteIndex",
    "NoteKind",
    "Notebook",
    "NotesError",
    "PathRefusedError",
    "ProcessGroup",
    "ReadyCheck",
    "Rule",
    "SearchHit",
    "ToolsConfig",
    "WindowCheck",
    "WorkspaceGuard",
    "WrongTerm",
    "condense",
    "git_argv",
    "git_environment",
    "group_alive",
    "page_lines",
    "pid_alive",
    "relevant_lines",
    "rule_from_message",
    "run_command",
    "run_git",
]

# The memory (SQLite, YAML, its models) is imported on first use of one of its names, so the file
# tools cost no more to import than before.
_EXPORTS: dict[str, str] = {
    "FeedbackRules": "loopkit_tools.memory",
    "Glossary": "loopkit_tools.memory",
    "GlossaryFiles": "loopkit_tools.memory",
    "IdFixer": "loopkit_tools.id_fixer",
    "MemoryTools": "loopkit_tools.memory",
    "Note": "loopkit_tools.memory",
    "NoteIndex": "loopkit_tools.memory",
    "NoteKind": "loopkit_tools.memory",
    "Notebook": "loopkit_tools.memory",
    "NotesError": "loopkit_tools.memory",
    "Rule": "loopkit_tools.memory",
    "SearchHit": "loopkit_tools.memory",
    "WrongTerm": "loopkit_tools.memory",
    "rule_from_message": "loopkit_tools.memory",
}
if TYPE_CHECKING:
    from loopkit_tools.id_fixer import IdFixer
    from loopkit_tools.memory import (
        FeedbackRules,
        Glossary,
        GlossaryFiles,
        MemoryTools,
        Note,
        Notebook,
        NoteIndex,
        NoteKind,
        NotesError,
        Rule,
        SearchHit,
        WrongTerm,
        rule_from_message,
    )
else:
    # Hidden from type checkers: a module __getattr__ would make any misspelt name "Any".
    from loopkit._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
