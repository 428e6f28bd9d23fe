"""What an eval runs: cards, configs, roles, repeats and graders (a suite).

A suite is a folder of cards (every ``*.md`` in it) or a TOML file:

.. code-block:: toml

    name = "invoice"                 # default: the file's name
    cards = ["../cards/*.md"]         # paths or globs, relative to this file
    repeat = 3
    develop = "develop"               # the first role of the pipeline
    then = "test"                     # the second ("" : none)
    round_trips = 0                   # how often the tester's defects go back
    graders = ["criteria", "checks", "tester", "build", "limits"]

    [limits]                          # per case (all of its runs together)
    max_rounds = 150
    max_cost = 2.0

    [[configs]]
    name = "claude"
    file = "../configs/claude.toml"   # a runner config file (examples/configs/)
    [[configs]]
    name = "skips-a-criterion"
    model = "scripted"                # or runner settings inline
    transcript = "transcripts/skips-a-criterion"

A config's ``transcript`` may be a folder: each card plays ``<card>.json`` there, its tester
``test/<card>.json``. A card's own check scripts are ``checks/<card>/*.json`` beside it.
"""

from __future__ import annotations

import glob
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from loopkit.cards.card import Card
from loopkit.cards.config import ConfigError, RunnerConfig, load_config, read_config_file
from loopkit.errors import CardError, describe_validation_error

__all__ = [
    "CHECKS_FOLDER",
    "DEFAULT_GRADERS",
    "CaseLimits",
    "EvalCard",
    "EvalConfig",
    "EvalSuite",
    "SuiteError",
    "card_checks",
    "load_suite",
]

#: Beside a card: ``checks/<card name>/*.json``, its own UI check scripts.
CHECKS_FOLDER = "checks"
DEFAULT_GRADERS = ("criteria", "checks", "tester", "build", "limits")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_SUITE_KEYS = {
    "name", "cards", "repeat", "develop", "then", "round_trips", "graders", "limits", "configs",
}  # fmt: skip
_PATH_SETTINGS = ("transcript", "app_source", "roles_dir", "record_transcript", "log")


class SuiteError(CardError):
    """The suite, a config or a card of an eval is not valid (bad input)."""


class CaseLimits(BaseModel):
    """The limits grader's bounds for one case, all of its runs together (None: no bound)."""

    model_config = ConfigDict(extra="forbid")

    max_rounds: int | None = Field(default=None, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_cost: float | None = Field(default=None, ge=0)
    max_seconds: float | None = Field(default=None, gt=0)


@dataclass
class EvalConfig:
    """A named runner config of the eval."""

    name: str
    settings: RunnerConfig
    path: Path | None = None

    def transcript_for(self, card: Path) -> Path | None:
        """The first developer run's transcript for ``card`` (None: the bundled ones, or a
        real model); a folder ``transcript`` holds ``<card>.json``."""
        given = self.settings.transcript
        if not self.settings.scripted or given is None:
            return None
        return given / f"{card.stem}.json" if given.is_dir() else given


@dataclass
class EvalCard:
    path: Path
    card: Card
    checks: list[Path] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.stem


@dataclass
class EvalSuite:
    name: str
    cards: list[EvalCard]
    configs: list[EvalConfig]
    repeat: int = 1
    develop: str = "develop"
    then: str | None = "test"
    round_trips: int = 0
    graders: list[str] = field(default_factory=lambda: list(DEFAULT_GRADERS))
    limits: CaseLimits = field(default_factory=CaseLimits)


def card_checks(card: Path) -> list[Path]:
    """The card's own check scripts: ``checks/<card name>/*.json`` beside it, sorted."""
    return sorted((card.parent / CHECKS_FOLDER / card.stem).glob("*.json"))


def _load_card(path: Path) -> EvalCard:
    card = Card.load(path)
    return EvalCard(path=path.resolve(), card=card, checks=card_checks(path.resolve()))


def _cards_from(patterns: list[Any], base: Path) -> list[Path]:
    found: list[Path] = []
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern.strip():
            raise SuiteError(f"cards: {pattern!r} is not a path or glob of card files")
        where = str(base / pattern)
        matches = (
            sorted(Path(p) for p in glob.glob(where)) if glob.has_magic(where) else [Path(where)]
        )
        if not matches:
            raise SuiteError(f"cards: {pattern!r} matches no file (relative to {base})")
        for match in matches:
            if not match.is_file():
                raise SuiteError(f"cards: {match} is not a card file")
            if match.resolve() not in (p.resolve() for p in found):
                found.append(match)
    return found


def config_from_file(path: Path, name: str | None = None) -> EvalConfig:
    """A runner config file as an eval config (named after the file)."""
    name = name or path.stem
    _check_name(name, f"config {path}")
    return EvalConfig(name=name, settings=load_config(path), path=path.resolve())


def _inline_config(entry: Any, base: Path, index: int) -> EvalConfig:
    if not isinstance(entry, dict):
        raise SuiteError(f"configs[{index}]: expected a table (name, file or runner settings)")
    entry = dict(entry)
    name = entry.pop("name", None)
    file = entry.pop("file", None)
    where = f"configs[{index}]"
    if file is not None and not isinstance(file, str):
        raise SuiteError(f"{where}: file: expected the path of a runner config (TOML)")
    path = (base / file).resolve() if file else None
    if name is None:
        if path is None:
            raise SuiteError(f"{where}: give it a name (or a file, whose name it takes)")
        name = path.stem
    if not isinstance(name, str):
        raise SuiteError(f"{where}: name: expected text")
    _check_name(name, where)
    for key in _PATH_SETTINGS:
        if isinstance(entry.get(key), str):
            entry[key] = str(base / entry[key])
    try:
        settings = load_config(path, **entry)
    except ConfigError as e:
        raise SuiteError(f"config {name!r}: {e}") from None
    return EvalConfig(name=name, settings=settings, path=path)


def _check_name(name: str, where: str) -> None:
    if not _NAME.fullmatch(name):
        raise SuiteError(
            f"{where}: name {name!r}: expected letters, digits, '.', '_' or '-' (at most 64)"
        )


def load_suite(
    source: Path,
    *,
    configs: list[Path] | None = None,
    repeat: int | None = None,
) -> EvalSuite:
    """The suite at ``source`` (a folder of cards or a TOML file); ``configs`` (runner config
    files) replace the suite's configs, ``repeat`` its repeats. Raises :class:`SuiteError` (or
    :class:`~loopkit.cards.ConfigError`, :class:`~loopkit.errors.CardError`) naming what is
    wrong."""
    source = Path(source)
    data: dict[str, Any] = {}
    if source.is_dir():
        cards = sorted(p for p in source.glob("*.md") if p.is_file())
        if not cards:
            raise SuiteError(f"suite {source}: the folder has no card (*.md)")
        name = source.resolve().name
    elif source.is_file():
        data = read_config_file(source)
        unknown = sorted(set(data) - _SUITE_KEYS)
        if unknown:
            raise SuiteError(
                f"suite {source}: unknown key(s) {', '.join(unknown)}; the keys are "
                f"{', '.join(sorted(_SUITE_KEYS))}"
            )
        base = source.resolve().parent
        patterns = data.get("cards")
        if not isinstance(patterns, list) or not patterns:
            raise SuiteError(f"suite {source}: cards: expected a list of card paths or globs")
        cards = _cards_from(patterns, base)
        name = data.get("name", source.stem)
        if not isinstance(name, str):
            raise SuiteError(f"suite {source}: name: expected text")
    else:
        raise SuiteError(f"suite {source}: no such folder or TOML file")
    base = source.resolve() if source.is_dir() else source.resolve().parent
    if configs:
        chosen = [config_from_file(Path(p)) for p in configs]
    elif data.get("configs"):
        if not isinstance(data["configs"], list):
            raise SuiteError(f"suite {source}: configs: expected [[configs]] tables")
        chosen = [_inline_config(e, base, i) for i, e in enumerate(data["configs"])]
    else:
        chosen = [EvalConfig(name="default", settings=load_config(None))]
    names = [c.name for c in chosen]
    if len(set(names)) != len(names):
        raise SuiteError(
            f"suite {source}: two configs share a name ({', '.join(names)}); name them apart"
        )
    then = data.get("then", "test")
    try:
        limits = CaseLimits.model_validate(data.get("limits", {}))
    except ValidationError as e:
        raise SuiteError(f"suite {source}: limits: {describe_validation_error(e)}") from None
    suite = EvalSuite(
        name=name,
        cards=[_load_card(p) for p in cards],
        configs=chosen,
        repeat=repeat if repeat is not None else _int(data, "repeat", 1, 1, source),
        develop=_text(data, "develop", "develop", source),
        then=then if isinstance(then, str) and then else None,
        round_trips=_int(data, "round_trips", 0, 0, source),
        graders=_graders(data.get("graders", list(DEFAULT_GRADERS)), source),
        limits=limits,
    )
    if suite.repeat < 1:
        raise SuiteError(f"--repeat {suite.repeat}: expected 1 or more")
    if not isinstance(then, str):
        raise SuiteError(f'suite {source}: then: expected a role name, or "" for none')
    return suite


def _int(data: dict[str, Any], key: str, default: int, least: int, source: Path) -> int:
    value = data.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise SuiteError(f"suite {source}: {key}: expected a whole number, {least} or more")
    return value


def _text(data: dict[str, Any], key: str, default: str, source: Path) -> str:
    value = data.get(key, default)
    if not isinstance(value, str) or not value:
        raise SuiteError(f"suite {source}: {key}: expected a role name")
    return value


def _graders(value: Any, source: Path) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise SuiteError(
            f"suite {source}: graders: expected a list of grader names (e.g. "
            f"{list(DEFAULT_GRADERS)}) or 'module:Class'"
        )
    return list(value)
