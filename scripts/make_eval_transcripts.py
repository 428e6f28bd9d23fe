"""Writes the transcripts of the example eval's second config, ``skips-a-criterion``.

    .venv/bin/python scripts/make_eval_transcripts.py          # writes examples/evals/transcripts/
    .venv/bin/python scripts/make_eval_transcripts.py --check  # exit 1 if a file is stale

Derived from the bundled transcripts (src/loopkit/demo/transcripts/, scripts/make_transcripts.py):
for the cards in :data:`SKIPPED` the develop run records no evidence for its last checkable
criterion and claims done anyway, twice (the runner answers the first claim with what is
missing; the second ends the run ``RESULT: failed: criterion C3 not verified``); the other cards
play the bundled transcripts unchanged. Each card's test transcript is copied beside it, so the
config is complete for every card (examples/evals/invoice.toml, docs/evals.md).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "src" / "loopkit" / "demo" / "transcripts"
OUT = ROOT / "examples" / "evals" / "transcripts" / "skips-a-criterion"

#: The cards whose develop run skips a criterion under this config.
SKIPPED = [
    "validate-quantity-and-price",
    "every-control-has-an-accessible-id",
    "open-says-when-a-file-is-not-an-invoice",
    "discount-stays-between-0-and-100",
]
#: The cards this config plays as bundled (the same as the good config).
KEPT = ["delete-asks-for-confirmation", "total-ignores-the-discount"]


def skip_last_criterion(transcript: dict[str, Any]) -> dict[str, Any]:
    """``transcript`` without the evidence of its last recorded criterion, and with its final
    answer given once more (after the runner's answer that a criterion is not verified)."""
    result = copy.deepcopy(transcript)
    turns = result["turns"]
    where = [
        i for i, t in enumerate(turns)
        if t.get("calls") and all(c["name"] == "record_evidence" for c in t["calls"])
    ]  # fmt: skip
    if len(where) != 1:
        raise SystemExit("make_eval_transcripts: expected one turn of record_evidence calls")
    evidence = turns[where[0]]
    dropped = evidence["calls"].pop()
    if not evidence["calls"]:
        del turns[where[0]]
    final = turns[-1]
    if final.get("calls") or "RESULT: done" not in final.get("text", ""):
        raise SystemExit("make_eval_transcripts: the last turn is not the RESULT: done answer")
    turns.append({"text": final["text"]})
    result["description"] = (
        f"{transcript['description']} Skips the evidence of {dropped['arguments']['criterion']} "
        "and claims done anyway (written by scripts/make_eval_transcripts.py)."
    )
    return result


def files() -> dict[Path, str]:
    """Every file of the config's folder, by path, with its text."""
    found: dict[Path, str] = {}

    def text(data: dict[str, Any]) -> str:
        return json.dumps(data, indent=1, ensure_ascii=False) + "\n"

    for card in [*KEPT, *SKIPPED]:
        develop = json.loads((BUNDLED / f"{card}.json").read_text(encoding="utf-8"))
        if card in SKIPPED:
            develop = skip_last_criterion(develop)
        found[OUT / f"{card}.json"] = text(develop)
        found[OUT / "test" / f"{card}.json"] = (BUNDLED / "test" / f"{card}.json").read_text(
            encoding="utf-8"
        )
        child = BUNDLED / "id_fixer" / f"{card}.json"
        if child.is_file():  # a subagent's transcript lies beside the main one
            found[OUT / "id_fixer" / f"{card}.json"] = child.read_text(encoding="utf-8")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the files")
    args = parser.parse_args()
    stale = []
    for path, text in files().items():
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(path)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    for path in stale:
        print(f"stale: {path.relative_to(ROOT)} (run scripts/make_eval_transcripts.py)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
