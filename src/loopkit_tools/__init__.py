"""loopkit_tools: guarded local tools for agent runs (files, build, app process, git).

There is no shell: the model gets ``list_files``, ``read_file``, ``write_file``, ``build_app``,
``start_app``, ``stop_app``, ``git_commit`` (and ``run_tests`` when configured), each checked by
the :class:`WorkspaceGuard`. See docs/tools.md and docs/security.md. The agent's memory (notes,
search, feedback rules, glossary) is :class:`MemoryTools` (docs/memory.md).
"""

from loopkit_tools.condense import condense, relevant_lines
from loopkit_tools.config import ReadyCheck, ToolsConfig
from loopkit_tools.git import CommitResult, GitCommitter
from loopkit_tools.local_tools import LocalTools
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
from loopkit_tools.paging import page_lines
from loopkit_tools.processes import CommandResult, ProcessGroup, group_alive, pid_alive, run_command
from loopkit_tools.workspace import PathRefusedError, WorkspaceGuard

__all__ = [
    "CommandResult",
    "CommitResult",
    "FeedbackRules",
    "GitCommitter",
    "Glossary",
    "GlossaryFiles",
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
    "WorkspaceGuard",
    "WrongTerm",
    "condense",
    "group_alive",
    "page_lines",
    "pid_alive",
    "relevant_lines",
    "rule_from_message",
    "run_command",
]
