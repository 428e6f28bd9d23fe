"""The bundled transcripts of the cards added for the evals, written by make_transcripts.py.

- The develop runs of ``open-says-when-a-file-is-not-an-invoice`` and
  ``discount-stays-between-0-and-100`` (``transcripts/<card>.json``), written like the others:
  read where the fix goes, reproduce live, edit, build, check every criterion live, record the
  evidence, commit.
- A test run (``transcripts/test/<card>.json``) for every develop card that had none, derived
  from the card's own check scripts (``examples/cards/checks/<card>/*.json``): the tester builds,
  replays each script's steps live with the UI tools, records one step per criterion, writes the
  first script as its regression script (the script runner runs it), the report, a commit, and
  ``RESULT: passed``. So ``--then test`` (and an eval's pipeline) runs on every card.
"""

from __future__ import annotations

import json
from typing import Any

from transcript_steps import (
    APP,
    NO_WINDOW_OPENED,
    REPORT_LINE,
    ROOT,
    acted,
    build_and_restart,
    call,
    common_start,
    edits,
    evidence,
    finish,
    memory_first,
    named,
    ok,
    patch,
    record_step,
    text_of,
    turn,
)

CARDS = ROOT / "examples" / "cards"

OPEN_CARD = "open-says-when-a-file-is-not-an-invoice"
RANGE_CARD = "discount-stays-between-0-and-100"
DISCOUNT_RANGE = "Discount: enter a percentage from 0 to 100"
NOT_AN_INVOICE = "invoice_app/README.md"


def fixed_open() -> str:
    text = (APP / "main_window.py").read_text(encoding="utf-8")
    text = patch(
        text,
        "from .storage import load_invoice, save_invoice\n",
        "from .storage import InvoiceFormatError, load_invoice, save_invoice\n",
    )
    text = patch(
        text,
        "        A missing or unreadable file is reported in the error label. A malformed file "
        "raises\n        InvoiceFormatError, which is not caught here: it reaches the crash "
        "dialog.\n",
        "        A missing or unreadable file, and a file that is not an invoice, are reported in "
        "the\n        error label; the invoice on screen stays as it was.\n",
    )
    return patch(
        text,
        '            self.show_error(f"File not found: {path}")\n            return\n',
        '            self.show_error(f"File not found: {path}")\n            return\n'
        "        except InvoiceFormatError:\n"
        '            self.show_error(f"Not an invoice: {path}")\n'
        "            return\n",
    )


def fixed_range() -> str:
    text = (APP / "main_window.py").read_text(encoding="utf-8")
    text = patch(
        text,
        "DESCRIPTION, QUANTITY, UNIT_PRICE, LINE_TOTAL = range(4)\n",
        "DESCRIPTION, QUANTITY, UNIT_PRICE, LINE_TOTAL = range(4)\n"
        f'DISCOUNT_RANGE = "{DISCOUNT_RANGE}"\n',
    )
    text = patch(
        text,
        "        return Invoice(items=items, "
        "discount_percent=parse_number(self.discount_input.text()))\n",
        "        return Invoice(items=items, discount_percent=self._discount_percent())\n"
        "\n"
        "    def _discount_percent(self) -> float:\n"
        '        """The discount typed, or 0 when it is outside 0 to 100 (refused: the error '
        'label\n        says so, see update_totals)."""\n'
        "        percent = parse_number(self.discount_input.text())\n"
        "        return percent if 0 <= percent <= 100 else 0.0\n",
    )
    return patch(
        text,
        '        self.total_label.setText(f"Total: {format_money(invoice.total)}")\n',
        '        self.total_label.setText(f"Total: {format_money(invoice.total)}")\n'
        "        if not 0 <= parse_number(self.discount_input.text()) <= 100:\n"
        "            self.show_error(DISCOUNT_RANGE)\n"
        "        elif self.error_label.text() == DISCOUNT_RANGE:\n"
        "            self.error_label.hide()\n",
    )


def open_card() -> dict[str, Any]:
    title = "Opening a file that is not an invoice should say so"
    crash = "CrashDialog"

    def open_path(path: str) -> list[dict[str, Any]]:
        return [call("ui_type_text", acted(), target="FilePathInput", text=path)]

    turns = common_start("main_window.py", fixed_open)
    turns += [
        turn(*open_path(NOT_AN_INVOICE), text="Reproducing: open a file that is not an invoice."),
        turn(call("ui_click", acted(f"#{crash}"), target="OpenButton")),
        turn(
            call("ui_click", acted(), target="CrashContinueButton", expect_disappear=[crash]),
            text="The crash dialog came up: InvoiceFormatError is not caught in open_file.",
        ),
        turn(
            *edits("main_window.py", fixed_open),
            text="Catching InvoiceFormatError in open_file and saying so in the error label.",
        ),
        *build_and_restart(),
        turn(*open_path(NOT_AN_INVOICE)),
        turn(
            named(
                call("ui_click", acted(**NO_WINDOW_OPENED), target="OpenButton"), "open-no-crash"
            ),
            text="No window opens this time.",
        ),
        turn(
            named(text_of("ErrorLabel", f"Not an invoice: {NOT_AN_INVOICE}"), "says-not-invoice"),
            named(text_of("TotalLabel", "Total: 250.00"), "total-kept"),
            named(
                call("ui_get_cell", ok("Consulting"), table="ItemsTable", row=0, column=0),
                "items-kept",
            ),
        ),
        turn(*open_path("no-such-invoice.json")),
        turn(call("ui_click", acted(**NO_WINDOW_OPENED), target="OpenButton")),
        turn(
            named(text_of("ErrorLabel", "File not found: no-such-invoice.json"), "missing"),
            text="A missing file is still reported as before.",
        ),
        evidence(
            C1=["open-no-crash", "says-not-invoice"],
            C2=["total-kept", "items-kept"],
            C3=["missing"],
        ),
        *finish(
            title,
            "open_file now catches InvoiceFormatError: a file that is not an invoice is reported "
            "as 'Not an invoice: PATH' and the invoice on screen stays. Verified live with "
            f"{NOT_AN_INVOICE} and a missing file.",
            "main_window.py",
            "Opening a file that is not an invoice now says so in the error label instead of the "
            "crash dialog, and keeps the invoice; a missing file is reported as before. All "
            "criteria were checked in the running app.",
        ),
    ]
    return {"description": f"Scripted run of the card '{title}'.", "turns": turns}


def range_card() -> dict[str, Any]:
    title = "A discount outside 0 to 100 % should be refused"

    def discount(value: str, ident: str | None = None) -> dict[str, Any]:
        typed = call("ui_type_text", acted(), target="DiscountInput", text=value)
        return named(typed, ident) if ident else typed

    turns = common_start("main_window.py", fixed_range)
    turns += [
        turn(discount("150"), text="Reproducing: a discount of 150 %."),
        turn(
            text_of("DiscountAmountLabel", "Discount: 375.00"),
            text_of("TotalLabel", "Total: 250.00"),
            text="Accepted: the discount amount is more than the subtotal.",
        ),
        turn(
            *edits("main_window.py", fixed_range),
            text="Applying only a discount from 0 to 100 and saying so in the error label.",
        ),
        *build_and_restart(),
        turn(discount("150", "type-150")),
        turn(
            named(text_of("ErrorLabel", DISCOUNT_RANGE), "error-150"),
            named(text_of("DiscountAmountLabel", "Discount: 0.00"), "amount-150"),
        ),
        turn(discount("-5", "type-minus-5")),
        turn(
            named(text_of("ErrorLabel", DISCOUNT_RANGE), "error-minus-5"),
            named(text_of("DiscountAmountLabel", "Discount: 0.00"), "amount-minus-5"),
        ),
        turn(discount("10", "type-10")),
        turn(
            named(text_of("DiscountAmountLabel", "Discount: 25.00"), "amount-10"),
            text="A discount in range is applied as before.",
        ),
        evidence(
            C1=["type-150", "error-150", "amount-150"],
            C2=["type-minus-5", "error-minus-5", "amount-minus-5"],
            C3=["type-10", "amount-10"],
        ),
        *finish(
            title,
            "A discount outside 0 to 100 is no longer applied: the error label says "
            f"'{DISCOUNT_RANGE}' and the discount amount is 0.00. Verified live with 150, -5 "
            "(refused) and 10 (25.00).",
            "main_window.py",
            "Discounts above 100 or below 0 are refused with a message and not applied; 10 % "
            "still gives 25.00. All criteria were checked in the running app.",
        ),
    ]
    return {"description": f"Scripted run of the card '{title}'.", "turns": turns}


# -- test runs from the cards' check scripts ---------------------------------------------------


def _checks(card: str) -> list[dict[str, Any]]:
    folder = CARDS / "checks" / card
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]


def _live(step: dict[str, Any]) -> dict[str, Any] | None:
    """A script step as the tester's live UI call (None: a step with no live counterpart)."""
    kind, target = step.get("type"), step.get("target")
    if kind == "action" and step.get("action") == "click":
        extra: dict[str, Any] = {}
        for key, argument in (("appear", "expect_appear"), ("disappear", "expect_disappear")):
            if step.get("expect", {}).get(key):
                extra[argument] = step["expect"][key]
        cell = {"row": step["row"], "column": step["column"]} if "row" in step else {}
        return call("ui_click", acted(), target=target, **cell, **extra)
    if kind == "action" and step.get("action") == "type_text":
        return call("ui_type_text", acted(), target=target, text=step["text"])
    if kind == "action" and step.get("action") == "set_cell":
        return call("ui_set_cell", {"error": False}, table=target, row=step["row"],
                    column=step["column"], text=step["text"])  # fmt: skip
    if kind == "assert" and "property" not in step:
        wanted = step.get("equals", step.get("contains"))
        if not isinstance(wanted, str):
            return None
        if "row" in step:
            return call("ui_get_cell", ok(wanted), table=target, row=step["row"],
                        column=step["column"])  # fmt: skip
        return call("ui_get_text", ok(wanted), target=target)
    return None


def tester_from_checks(card: str) -> dict[str, Any]:
    """The test run of ``card`` from its check scripts (see the module docstring)."""
    from loopkit.cards.card import Card

    parsed = Card.load(CARDS / f"{card}.md")
    scripts = _checks(card)
    if not scripts:
        raise SystemExit(f"more_transcripts: {card} has no check scripts to test it with")
    turns = memory_first(parsed.title)
    turns += [
        turn(call("build_app", ok("Build succeeded")), text="I build the card's code myself."),
        turn(call("start_app", ok("The app is running"))),
        turn(call("ui_list_windows", ok("Invoice Editor", "InvoiceWindow"))),
    ]
    for script in scripts:
        # Live up to the first step that needs the runner's variables (a ${tmp} path): the
        # regression script runs the whole of it.
        steps = script["steps"]
        upto = next((i for i, s in enumerate(steps) if "${" in json.dumps(s)), len(steps))
        live = [c for c in map(_live, steps[:upto]) if c is not None]
        turns += [turn(c) for c in live]
    checked = [c for c in parsed.criteria if not c.manual]
    for number, criterion in enumerate(checked, start=1):
        turns.append(
            turn(
                record_step(
                    number, criterion.text, "checked live with the UI tools above; the "
                    "regression script checks it again", criterion=criterion.id,
                )
            )
        )  # fmt: skip
    turns.append(turn(call("stop_app", ok("no process of it is left"))))
    first = scripts[0]
    name = card if len(card) <= 60 else card[:60]
    regression = {k: first[k] for k in ("name", "description", "steps")}
    turns += [
        turn(
            call(
                "write_regression_script",
                ok("the script runner ran it once: PASSED", "0 failed"),
                name=name,
                script=regression,
            ),
            text="What must keep working goes into a regression script.",
        ),
        turn(
            call(
                "write_test_report",
                ok(
                    "report written",
                    f"{len(checked)} steps, 0 failed, 0 finding(s), 1 regression script(s)",
                ),
                verdict="passed",
                summary=f"Every criterion of '{parsed.title}' holds in the running app; the "
                "regression script passed in the script runner.",
            )
        ),
        turn(
            call(
                "git_commit",
                ok(f"ui_tests/{name}.json"),
                message=f"card: {parsed.title} (test)\n\nChecked every criterion live "
                f"({len(checked)} steps passed, no findings); adds the regression script "
                f"ui_tests/{name}.json (passed in the script runner).",
            )
        ),
        {
            "text": f"Every criterion of the card holds in the running app. The regression "
            f"script ui_tests/{name}.json passed in the script runner.\n\n{REPORT_LINE}\n\n"
            "RESULT: passed"
        },
    ]
    return {"description": f"Scripted test run of the card '{parsed.title}'.", "turns": turns}


#: Cards whose test run comes from their check scripts.
TESTED_FROM_CHECKS = [
    "total-ignores-the-discount",
    "validate-quantity-and-price",
    "every-control-has-an-accessible-id",
    OPEN_CARD,
    RANGE_CARD,
]

#: The transcripts this module adds (names as in make_transcripts.TRANSCRIPTS).
MORE_TRANSCRIPTS = {
    OPEN_CARD: open_card,
    RANGE_CARD: range_card,
    **{f"test/{card}": (lambda card=card: tester_from_checks(card)) for card in TESTED_FROM_CHECKS},
}
