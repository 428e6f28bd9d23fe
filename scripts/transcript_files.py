"""Renders the bundled transcripts and writes them (or checks them) under
src/loopkit/demo/transcripts/: ``<card>`` for the develop role, ``<role>/<card>`` for the others.
Each gets one ``load_tools`` call before its first use of a deferred tool (:func:`render`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from typing import Any

from transcript_steps import ROOT, call, ok, turn

from loopkit.cards.config import DEFAULT_CORE_TOOLS, DEFAULT_DEFER_TOOLS
from loopkit.middleware.tool_disclosure import LOAD_TOOLS, ToolDisclosure

OUT = ROOT / "src" / "loopkit" / "demo" / "transcripts"

#: A transcript's maker: the transcript as JSON data.
Maker = Callable[[], dict[str, Any]]


#: The (core_tools, defer_tools) of a transcript's run (the card runner's settings); a
#: transcript played under another role or config with its own sets is listed here with them.
DISCLOSURE: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # The id fixer's child run is offered its file tools on every request (no disclosure).
    "id_fixer/every-control-has-an-accessible-id": ((), ()),
}


def load_deferred_tools(
    transcript: dict[str, Any], core: tuple[str, ...], defer: tuple[str, ...]
) -> dict[str, Any]:
    """``transcript`` with one ``load_tools`` call, before the first use of any deferred tool
    (see ``ToolDisclosure``), that loads every such tool the transcript calls (in the order of
    first use): a careful model loads what it will need once, early, while the prompt is short
    (a load changes the tools offered, which a provider's prompt cache sees as a new prompt)."""
    disclosure = ToolDisclosure(core, defer=defer)
    turns = transcript["turns"]
    deferred: dict[str, int] = {}
    for n, t in enumerate(turns):
        for c in t.get("calls", []):
            if not disclosure.is_core(c["name"]):
                deferred.setdefault(c["name"], n)
    if not deferred:
        return transcript
    load = call(LOAD_TOOLS, ok("Loaded"), names=list(deferred))
    first_use = min(deferred.values())
    if first_use > 0 and turns[0].get("calls"):
        turns[0] = {**turns[0], "calls": [*turns[0]["calls"], load]}
    else:
        turns.insert(0, turn(load, text="Loading the tools I will need."))
    return transcript


def render(name: str, make: Maker) -> str:
    """The file of the transcript ``name`` that ``make`` makes."""
    core, defer = DISCLOSURE.get(name, (DEFAULT_CORE_TOOLS, DEFAULT_DEFER_TOOLS))
    transcript = load_deferred_tools(make(), core, defer)
    return json.dumps(transcript, indent=1, ensure_ascii=False) + "\n"


def main(transcripts: Mapping[str, Maker], description: str | None) -> int:
    """Write (or with --check, check) ``transcripts`` (file name: maker); ``description``: the
    calling script's docstring, for --help."""
    parser = argparse.ArgumentParser(description=(description or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the bundled files")
    args = parser.parse_args()
    stale = []
    for name, make in transcripts.items():
        target = OUT / f"{name}.json"
        text = render(name, make)
        if args.check:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                stale.append(target)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            print(f"wrote {target.relative_to(ROOT)}")
    for target in stale:
        print(f"stale: {target.relative_to(ROOT)} (run scripts/make_transcripts.py)")
    return 1 if stale else 0
