"""The agent's memory: notes (router, topics, notes), full-text search, feedback rules, glossary.

Everything lives as Markdown in the app's repository (``notes/`` by default) and is read and
written through a :class:`~loopkit_tools.workspace.WorkspaceGuard` confined to that folder; the
search index (SQLite FTS5, BM25) is a cache outside the repository. See docs/memory.md.
"""

from loopkit_tools.memory.catalog import Router, RouterLine, TopicEntry, TopicFile
from loopkit_tools.memory.glossary import Glossary, GlossaryFiles, WrongTerm
from loopkit_tools.memory.models import Note, NoteKind
from loopkit_tools.memory.notebook import Notebook, NotesError, WrittenNote, default_cache_dir
from loopkit_tools.memory.rules import FeedbackRules, Rule, parse_rules, rule_from_message
from loopkit_tools.memory.search import NoteIndex, Refresh, SearchHit
from loopkit_tools.memory.tools import MemoryTools

__all__ = [
    "FeedbackRules",
    "Glossary",
    "GlossaryFiles",
    "MemoryTools",
    "Note",
    "NoteIndex",
    "NoteKind",
    "Notebook",
    "NotesError",
    "Refresh",
    "Router",
    "RouterLine",
    "Rule",
    "SearchHit",
    "TopicEntry",
    "TopicFile",
    "WrittenNote",
    "WrongTerm",
    "default_cache_dir",
    "parse_rules",
    "rule_from_message",
]
