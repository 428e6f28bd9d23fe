"""Each card, from a fresh scratch repository, ends RESULT: done with one commit of one app file;
an independent UI test then checks the card's acceptance criteria on the fixed app, and the same
test fails on the unfixed app, for the right reason: the app is up and the card's first
criterion does not hold (not any error on the way there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopkit import Card, CardState
from loopkit_ui.headless_desktop import HeadlessDesktop

from .acceptance import ACCEPTANCE, CriterionNotMet, app_under_test
from .helpers import CARD_NAMES, ROOT, copy_card, run_demo

pytestmark = [pytest.mark.integration, pytest.mark.ui]

# What the unfixed app gets wrong: the card's first criterion, for each card.
FAILS_ON_THE_UNFIXED_APP = {
    "total-ignores-the-discount": (1, "with a discount of 10 the label reads 'Total: 250.00'"),
    "delete-asks-for-confirmation": (1, "no dialog opened; the first item is now 'Travel'"),
    "validate-quantity-and-price": (1, "'-3' in column 1 was kept as '-3'"),
}


@pytest.mark.parametrize("name", CARD_NAMES)
def test_card_run_then_acceptance_criteria_live(
    tmp_path: Path, name: str, headless_desktop: HeadlessDesktop
) -> None:
    card = copy_card(tmp_path, name)
    run = run_demo(tmp_path, card)
    assert run.returncode == 0, run.output
    assert "Model: scripted" in run.output.splitlines()[0]
    assert "RESULT: done" in run.output
    assert Card.load(card).state is CardState.DONE
    events = run.events()
    assert events[0]["type"] == "start" and events[-1]["data"]["status"] == "done"
    # Every criterion proven: fresh evidence, and the live checks replayed on a fresh app.
    assert "verified by replay" in " ".join(run.output.split())
    assert events[-1]["data"]["verified_by_replay"] is True
    assert {c["status"] for c in events[-1]["data"]["criteria"]} == {"verified"}
    # one commit on top of the initial copy, changing exactly one file of the app (and the
    # notes, when the run wrote one: the delete card's run does, for the runs after it)
    assert run.git("rev-list", "--count", "HEAD").strip() == "2"
    changed = run.git("show", "--name-only", "--format=", "HEAD").split()
    app_files = [f for f in changed if f.startswith("invoice_app/")]
    assert len(app_files) == 1, changed
    assert all(f.startswith("notes/") for f in changed if f not in app_files), changed
    assert run.git("log", "-1", "--format=%s").strip() == f"card: {Card.load(card).title}"
    assert run.git("status", "--porcelain").strip() == ""

    check = ACCEPTANCE[name]
    with app_under_test(headless_desktop, run.repo(), tmp_path / "fixed.log") as app:
        check(app.ui)
    # The negative control: the unfixed app runs, and the check fails on the card's criterion.
    with app_under_test(headless_desktop, ROOT / "examples", tmp_path / "unfixed.log") as app:
        with pytest.raises(CriterionNotMet) as failed:
            check(app.ui)
        assert app.answering(), "the unfixed app went away during its check"
    number, detail = FAILS_ON_THE_UNFIXED_APP[name]
    assert (failed.value.card, failed.value.number, failed.value.detail) == (name, number, detail)
    assert failed.value.criterion == Card.load(card).acceptance_criteria[number - 1]
