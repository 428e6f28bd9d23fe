"""The card runner: the application built on the library (not part of the library itself).

A Kanban card is a Markdown file with YAML front matter (:mod:`loopkit.cards.card`); a run ends
with a RESULT line (:mod:`loopkit.cards.result`); :class:`CardRunner` runs one card as an
:class:`~loopkit.agents.Agent` run with the role's instructions, the tool sources' tools and the
limits, and maps how the run ended to the card's state (:mod:`loopkit.cards.runner`); the demo's
settings come from a TOML file and ``LOOPKIT_*`` variables (:mod:`loopkit.cards.config`). A card's
acceptance criteria have ids (:mod:`loopkit.cards.criteria`); a role that verifies proves each
one before its done counts (:mod:`loopkit.cards.evidence`, :mod:`loopkit.cards.verification`).

Names are loaded on first use, as in :mod:`loopkit`: reading a card does not import the agent
layer, and the runner does not import the settings. Constants stay in their modules
(``loopkit.cards.card.MAX_CARD_BYTES``, ``loopkit.cards.runner.CARD_PREFIX``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "Card",
    "CardError",
    "CardRunOutcome",
    "CardRunner",
    "CardState",
    "ConfigError",
    "Criterion",
    "EvidencePolicy",
    "MCPToolSource",
    "ReplayOutcome",
    "Replayer",
    "RunLimits",
    "RunResult",
    "RunnerConfig",
    "ToolSource",
    "Verification",
    "load_config",
    "mark_failed_in_file",
    "parse_result",
    "read_card_text",
]

_EXPORTS: dict[str, str] = {
    "Card": "loopkit.cards.card",
    "CardState": "loopkit.cards.card",
    "mark_failed_in_file": "loopkit.cards.card",
    "read_card_text": "loopkit.cards.card",
    "ConfigError": "loopkit.cards.config",
    "RunnerConfig": "loopkit.cards.config",
    "load_config": "loopkit.cards.config",
    "Criterion": "loopkit.cards.criteria",
    "EvidencePolicy": "loopkit.cards.evidence",
    "RunResult": "loopkit.cards.result",
    "parse_result": "loopkit.cards.result",
    "CardRunOutcome": "loopkit.cards.runner",
    "CardRunner": "loopkit.cards.runner",
    "MCPToolSource": "loopkit.cards.runner",
    "RunLimits": "loopkit.cards.runner",
    "ToolSource": "loopkit.cards.runner",
    "ReplayOutcome": "loopkit.cards.verification",
    "Replayer": "loopkit.cards.verification",
    "Verification": "loopkit.cards.verification",
    "CardError": "loopkit.errors",
}

if TYPE_CHECKING:
    from loopkit.cards.card import Card, CardState, mark_failed_in_file, read_card_text
    from loopkit.cards.config import ConfigError, RunnerConfig, load_config
    from loopkit.cards.criteria import Criterion
    from loopkit.cards.evidence import EvidencePolicy
    from loopkit.cards.result import RunResult, parse_result
    from loopkit.cards.runner import (
        CardRunner,
        CardRunOutcome,
        MCPToolSource,
        RunLimits,
        ToolSource,
    )
    from loopkit.cards.verification import Replayer, ReplayOutcome, Verification
    from loopkit.errors import CardError
else:
    # Hidden from type checkers: a module ``__getattr__`` would make any misspelt name "Any".
    from loopkit._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
