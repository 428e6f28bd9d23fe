"""Writes the scripted model's bundled transcripts, one per card of the invoice app.

    .venv/bin/python scripts/make_transcripts.py          # writes src/loopkit/demo/transcripts/
    .venv/bin/python scripts/make_transcripts.py --check  # exit 1 if a bundled file is stale

Each transcript is what a careful model does for its card: inspect the code and the live app,
write the fix (whole file content, derived here from the current app source by a small textual
patch), build, verify every acceptance criterion through the UI server, commit, and end with the
RESULT line. Every tool result has an expectation, so a strict replay fails at the first round where
the app answers differently. tests/demo checks that the bundled files match this script.
"""

from __future__ import annotations

import sys
from typing import Any

from more_transcripts import MORE_TRANSCRIPTS
from tester_transcripts import TEST_TRANSCRIPTS
from transcript_files import Maker, main
from transcript_fixes import (
    NOTES_IDS,
    fixed_delete,
    fixed_model,
    fixed_notes,
    fixed_validation,
    notes_missing_ids,
)
from transcript_steps import (
    APP,
    NO_WINDOW_OPENED,
    acted,
    build_and_restart,
    call,
    common_start,
    edits,
    evidence,
    finish,
    named,
    ok,
    text_of,
    turn,
)

from loopkit_ui.missing_ids import id_task

# The note the delete card's develop run writes, and the document run finds by searching.
DELETE_NOTE_TOPIC = "deleting-items"
DELETE_NOTE_TITLE = "Delete an item with confirmation"
DELETE_NOTE_PATH = "notes/deleting-items/delete-an-item-with-confirmation.md"
DELETE_NOTE_STEPS = [
    "Select the item's row in ItemsTable",
    "Click Delete selected (DeleteSelectedButton): the dialog 'Delete item' "
    "(ConfirmDeleteDialog) asks 'Delete the item \"<description>\"?'",
    "No (ConfirmDeleteNoButton) keeps the row and the totals",
    "Yes (ConfirmDeleteYesButton) removes the row and updates the totals",
    "Without a selected row Delete selected does nothing",
]


def delete_note() -> dict[str, Any]:
    return call(
        "write_note",
        ok(f"Wrote {DELETE_NOTE_PATH}", f"new topic {DELETE_NOTE_TOPIC!r}"),
        kind="workflow",
        topic=DELETE_NOTE_TOPIC,
        title=DELETE_NOTE_TITLE,
        steps=DELETE_NOTE_STEPS,
        topic_description="deleting items of an invoice",
    )


def discount_card() -> dict[str, Any]:
    title = "The total should subtract the discount"
    turns = common_start("model.py", fixed_model)
    turns += [
        turn(
            call("ui_type_text", acted(), target="DiscountInput", text="10"),
            text="Reproducing: a 10 % discount.",
        ),
        turn(
            text_of("DiscountAmountLabel", "Discount: 25.00"),
            text_of("TotalLabel", "Total: 250.00"),
        ),
        turn(
            *edits("model.py", fixed_model),
            text="The total ignores discount_amount; subtracting it in Invoice.total.",
        ),
        *build_and_restart(),
        turn(call("ui_type_text", acted(), target="DiscountInput", text="10")),
        turn(
            named(text_of("SubtotalLabel", "Subtotal: 250.00"), "subtotal-250"),
            text_of("DiscountAmountLabel", "Discount: 25.00"),
            named(text_of("TotalLabel", "Total: 225.00"), "total-225"),
        ),
        turn(
            call("ui_type_text", acted(), target="DiscountInput", text="0"),
            named(text_of("TotalLabel", "Total: 250.00"), "total-250"),
        ),
        turn(
            named(call("ui_type_text", acted(), target="DiscountInput", text="20"), "type-20"),
            named(text_of("TotalLabel", "Total: 200.00"), "total-200"),
            text="Changing the discount updates the total without another click.",
        ),
        evidence(C1=["subtotal-250", "total-225"], C2=["total-250"], C3=["type-20", "total-200"]),
        *finish(
            title,
            "Invoice.total now subtracts the discount amount. Verified live: discount 10 on "
            "250.00 shows Total 225.00, discount 0 shows 250.00, and 20 updates it to 200.00 "
            "at once.",
            "model.py",
            "Invoice.total subtracted nothing; it now returns subtotal minus discount. All three "
            "criteria were checked in the running app (225.00, 250.00, 200.00).",
        ),
    ]
    return {"description": f"Scripted run of the card '{title}'.", "turns": turns}


def delete_card() -> dict[str, Any]:
    title = "Deleting an item should ask first"
    dialog = "ConfirmDeleteDialog"
    delete_opens_dialog = call(
        "ui_click",
        acted(active_dialog=f"Delete item #{dialog}"),
        target="DeleteSelectedButton",
        expect_appear=[dialog],
    )
    turns = common_start("main_window.py", fixed_delete)
    turns += [
        turn(
            call("ui_click", acted(), target="ItemsTable", row=1, column=0),
            text="Reproducing: select Travel and delete it.",
        ),
        turn(call("ui_click", acted(**NO_WINDOW_OPENED), target="DeleteSelectedButton")),
        turn(
            text_of("TotalLabel", "Total: 200.00"), text="The row went at once, without a question."
        ),
        turn(
            *edits("main_window.py", fixed_delete),
            text="Adding a Yes/No confirmation that names the item.",
        ),
        *build_and_restart(),
        turn(
            named(
                call("ui_click", acted(**NO_WINDOW_OPENED), target="DeleteSelectedButton"),
                "none-selected",
            ),
            named(text_of("TotalLabel", "Total: 250.00"), "none-total"),
            text="No row selected: nothing happens, as before.",
        ),
        turn(call("ui_click", acted(), target="ItemsTable", row=0, column=0)),
        turn(named(delete_opens_dialog, "asks")),
        turn(
            named(text_of("ConfirmDeleteText", 'Delete the item "Consulting"?'), "asks-text"),
            text="The dialog names the item.",
        ),
        turn(call("ui_click", acted(), target="ConfirmDeleteNoButton", expect_disappear=[dialog])),
        turn(
            named(
                call("ui_get_cell", ok("Consulting"), table="ItemsTable", row=0, column=0),
                "no-cell",
            ),
            named(text_of("TotalLabel", "Total: 250.00"), "no-total"),
            text="No left everything as it was.",
        ),
        turn(delete_opens_dialog),
        turn(call("ui_click", acted(), target="ConfirmDeleteYesButton", expect_disappear=[dialog])),
        turn(
            named(
                call("ui_get_cell", ok("Travel"), table="ItemsTable", row=0, column=0), "yes-cell"
            ),
            named(text_of("SubtotalLabel", "Subtotal: 50.00"), "yes-subtotal"),
            named(text_of("TotalLabel", "Total: 50.00"), "yes-total"),
            text="Yes removed the row and updated the totals.",
        ),
        evidence(
            C1=["asks", "asks-text"],
            C2=["no-cell", "no-total", "yes-cell", "yes-subtotal", "yes-total"],
            C3=["none-selected", "none-total"],
        ),
        *finish(
            title,
            "Delete selected now asks with a Yes/No dialog that names the item. Verified live: "
            "No keeps the row and totals, Yes removes it (total 250.00 to 50.00), and without a "
            "selection nothing happens.",
            "main_window.py",
            "Delete selected now asks first in a dialog naming the item. Checked live: without a "
            "selection nothing happens, No keeps everything, Yes removes the row and updates the "
            f"totals. The checked steps are in the note {DELETE_NOTE_PATH}.",
            note=delete_note(),
        ),
    ]
    return {"description": f"Scripted run of the card '{title}'.", "turns": turns}


def validation_card() -> dict[str, Any]:
    title = "Quantity and unit price should accept only valid numbers"

    def cell(row: int, column: int, *fragments: str) -> dict[str, Any]:
        return call("ui_get_cell", ok(*fragments), table="ItemsTable", row=row, column=column)

    def set_cell(row: int, column: int, value: str, now: str) -> dict[str, Any]:
        # ui_set_cell reads the cell back: its answer says what the cell holds now (a refused
        # value leaves the previous one), so no ui_get_cell is needed after it.
        return call(
            "ui_set_cell",
            ok(f"cell text is now '{now}'"),
            table="ItemsTable",
            row=row,
            column=column,
            text=value,
        )

    turns = common_start("main_window.py", fixed_validation)
    turns += [
        turn(set_cell(0, 1, "-3", "-3"), text="Reproducing: a negative quantity."),
        turn(
            text_of("TotalLabel", "Total: -250.00"),
            text="Accepted as typed: the total goes negative.",
        ),
        turn(
            *edits("main_window.py", fixed_validation),
            text="Refusing negative and non-numeric quantity and price in _on_item_changed.",
        ),
        *build_and_restart(),
        turn(set_cell(0, 1, "-3", "2")),
        turn(
            named(text_of("ErrorLabel", "Quantity: -3 is negative"), "negative-quantity"),
            named(text_of("TotalLabel", "Total: 250.00"), "negative-total"),
            text="A negative quantity is refused and the label says why.",
        ),
        turn(set_cell(1, 2, "abc", "50.00")),
        turn(named(text_of("ErrorLabel", "Unit price:", "is not a number"), "text-price")),
        turn(set_cell(0, 2, "-1", "100.00")),
        turn(named(text_of("ErrorLabel", "Unit price: -1 is negative"), "negative-price")),
        turn(named(set_cell(0, 1, "2.5", "2.5"), "decimal")),
        turn(
            named(cell(0, 3, "250.00"), "decimal-line"),
            named(text_of("TotalLabel", "Total: 300.00"), "decimal-total"),
            text="2.5 is accepted and the totals follow.",
        ),
        evidence(
            C1=["negative-quantity", "negative-total", "negative-price"],
            C2=["text-price"],
            C3=["decimal", "decimal-line", "decimal-total"],
        ),
        *finish(
            title,
            "Quantity and unit price cells now refuse negative and non-numeric input: the cell "
            "returns to its last valid value and the error label says why. Verified live with "
            "-3, abc and -1 (refused) and 2.5 (accepted, total 300.00).",
            "main_window.py",
            "Negative and non-numeric quantity and price are refused with a message, valid numbers "
            "such as 2.5 still work. All criteria checked in the running app.",
        ),
    ]
    return {"description": f"Scripted run of the card '{title}'.", "turns": turns}


def id_fixer_child() -> dict[str, Any]:
    """The id fixer's own run (the child run of fix_missing_ids): file tools only."""
    main_window = (APP / "main_window.py").read_text(encoding="utf-8").splitlines()
    identify = main_window.index(
        "def _identify(widget: QWidget, ident: str, name: str | None = None) -> None:"
    )
    reply = "\n".join(
        f"{m.role} {m.name!r} -> {ident} (invoice_app/notes_panel.py)"
        for m, (_, ident) in zip(notes_missing_ids(), NOTES_IDS, strict=True)
    )
    turns = [
        turn(
            call("read_file", ok("Every control has an accessible id"), path="docs/CODING.md"),
            call("list_files", ok("invoice_app/notes_panel.py"), folder="invoice_app"),
            text="The coding rules first, then where the Notes panel is built.",
        ),
        turn(
            call(
                "read_file",
                ok("class NotesPanel", "Clear notes"),
                path="invoice_app/notes_panel.py",
            )
        ),
        turn(
            call(
                "read_file",
                ok("widget.setAccessibleIdentifier(ident)"),
                path="invoice_app/main_window.py",
                start_line=identify + 1,
                max_lines=6,
            ),
            text="How the app sets ids: object name and accessible id, the same.",
        ),
        turn(
            call(
                "write_file",
                ok("Wrote invoice_app/notes_panel.py"),
                path="invoice_app/notes_panel.py",
                content=fixed_notes(),
            ),
            text="Adding only the id lines, after the line that creates each control.",
        ),
        {"text": reply},
    ]
    return {"description": "Scripted run of the id fixer (the subagent) for the Notes panel.",
            "turns": turns}  # fmt: skip


def ids_card() -> dict[str, Any]:
    title = "Every control has an accessible id"
    missing = notes_missing_ids()
    task = id_task(missing, len(missing))

    def element(ident: str, role: str, name: str) -> dict[str, Any]:
        return call(
            "ui_get_element",
            {"error": False, "json": {"id": ident, "role": role, "name": name}},
            target=ident,
        )

    turns = [
        turn(
            call("list_files", ok("invoice_app/notes_panel.py"), folder="invoice_app"),
            call("read_file", ok("Every control has an accessible id"), path="docs/CODING.md"),
            call("read_router", ok("There are no notes yet")),
            text="The files, the coding rules and the notes first.",
        ),
        turn(call("start_app", ok("The app is running")), text="Which controls lack an id?"),
        turn(call("ui_missing_ids", ok("5 control(s) without an id", task))),
        turn(
            call("fix_missing_ids", ok(*(ident for _, ident in NOTES_IDS)), task=task),
            text="Handing the task to the id fixer, as ui_missing_ids wrote it.",
        ),
        *build_and_restart(),
        turn(named(call("ui_missing_ids", ok("Every control has an id")), "none-missing")),
        turn(
            *(
                named(element(ident, m.role, m.name), f"found-{ident}")
                for m, (_, ident) in zip(missing, NOTES_IDS, strict=True)
            ),
            text="Each new id is in the live tree, on the right control.",
        ),
        turn(
            call("ui_type_text", acted(), target="NotesTextInput", text="Due in 30 days"),
            text_of("NotesCharacterCountLabel", "14 characters"),
        ),
        turn(
            call("ui_click", acted(), target="NotesClearButton"),
            text_of("NotesCharacterCountLabel", "0 characters"),
            text="The ids work for automation: typed, counted, cleared.",
        ),
        evidence(C1=["none-missing"], C2=[f"found-{ident}" for _, ident in NOTES_IDS]),
        turn(
            call(
                "write_note",
                ok("Wrote notes/accessibility/", "new topic 'accessibility'"),
                kind="workflow",
                topic="accessibility",
                title="Give controls without an id their ids",
                steps=[
                    "ui_missing_ids lists the controls without an id and writes the task",
                    "fix_missing_ids adds the ids in the source (file tools only)",
                    "stop_app, build_app, start_app",
                    "ui_missing_ids finds none; ui_get_element finds each new id",
                ],
                topic_description="accessible ids (AutomationIds) of the app's controls",
            ),
        ),
        turn(call("stop_app", ok("no process of it is left"))),
        turn(
            call(
                "git_commit",
                ok("invoice_app/notes_panel.py", "notes/accessibility.md"),
                message=f"card: {title}\n\nThe Notes panel's five controls get accessible ids "
                "(and the same object names) named from area, control type and purpose; no "
                "other line changed. Verified live: ui_missing_ids finds none, each id is found "
                "and the panel works through them.",
            ),
        ),
        {
            "text": "The id fixer added the five ids to notes_panel.py (only id lines). Checked "
            "live: no control without an id is left, and each id names the right control."
            "\n\nRESULT: done"
        },
    ]
    return {"description": f"Scripted run of the card '{title}'.", "turns": turns}


# -- other roles -----------------------------------------------------------------------------

DELETE_DOC = """# Deleting items

Delete selected removes items from the invoice, after asking you first.

1. Click the row of the item in the items table.
2. Click **Delete selected**. A dialog titled **Delete item** asks:
   *Delete the item "Consulting"?* (with the description of your item).
3. Click **No** to keep the item: the table and the totals stay as they were.
   Click **Yes** to delete it: the row goes and the subtotal and total are updated.

Without a selected row, Delete selected does nothing.
"""


def delete_document() -> dict[str, Any]:
    """The document role on the delete card, in the repository of its develop run: memory
    first (the router, a search that must rank the develop run's note first), the feature
    checked live, the page written and committed, the note and the rule cited."""
    title = "Deleting an item should ask first"
    dialog = "ConfirmDeleteDialog"
    turns = [
        turn(call("read_router", ok(DELETE_NOTE_TOPIC)), text="Memory first: the notes' router."),
        turn(
            call(
                "search_notes",
                ok(f"1. {DELETE_NOTE_PATH} [workflow, {DELETE_NOTE_TOPIC}]"),
                symptom="delete an item with confirmation",
            )
        ),
        turn(call("read_note", ok("ConfirmDeleteDialog", "## Steps"), path=DELETE_NOTE_PATH)),
        turn(
            call("list_files", ok("docs/CODING.md"), folder="docs"),
            text="No user page about deleting yet.",
        ),
        turn(call("start_app", ok("The app is running")), text="Checking the steps live."),
        turn(call("ui_click", acted(), target="ItemsTable", row=0, column=0)),
        turn(
            call(
                "ui_click",
                acted(active_dialog=f"Delete item #{dialog}"),
                target="DeleteSelectedButton",
                expect_appear=[dialog],
            )
        ),
        turn(
            text_of("ConfirmDeleteText", 'Delete the item "Consulting"?'),
            text_of("ConfirmDeleteYesButton", "Yes"),
            text_of("ConfirmDeleteNoButton", "No"),
        ),
        turn(call("ui_click", acted(), target="ConfirmDeleteNoButton", expect_disappear=[dialog])),
        turn(call("ui_get_cell", ok("Consulting"), table="ItemsTable", row=0, column=0)),
        turn(call("stop_app", ok("no process of it is left"))),
        turn(
            call(
                "write_file",
                ok("Wrote docs/deleting-items.md"),
                path="docs/deleting-items.md",
                content=DELETE_DOC,
            ),
            text="Writing the page in the words the app shows.",
        ),
        turn(
            call(
                "git_commit",
                ok("docs/deleting-items.md"),
                message=f"card: {title} (documentation)\n\nA user page for deleting items, "
                "checked in the running app.",
            )
        ),
        {
            "text": "Wrote docs/deleting-items.md: how to delete an item and what the "
            "confirmation dialog asks, checked in the running app (No keeps the row). The steps "
            f"came from the note {DELETE_NOTE_PATH}, found by search_notes. Applied rules: 1."
            "\n\nRESULT: done"
        },
    ]
    return {"description": f"Scripted document run of the card '{title}'.", "turns": turns}


#: Transcript files under src/loopkit/demo/transcripts/: ``<card>`` for the develop role,
#: ``<role>/<card>`` for the others.
TRANSCRIPTS: dict[str, Maker] = {
    "total-ignores-the-discount": discount_card,
    "delete-asks-for-confirmation": delete_card,
    "validate-quantity-and-price": validation_card,
    "document/delete-asks-for-confirmation": delete_document,
    "every-control-has-an-accessible-id": ids_card,
    # A subagent's transcript lies in a folder named after its tool group, beside the main one.
    "id_fixer/every-control-has-an-accessible-id": id_fixer_child,
}
# The test role's transcripts are built in their own module.
TRANSCRIPTS.update({f"test/{name}": make for name, make in TEST_TRANSCRIPTS.items()})
# The cards added for the evals, and the test runs derived from the cards' check scripts.
TRANSCRIPTS.update(MORE_TRANSCRIPTS)


if __name__ == "__main__":
    sys.exit(main(TRANSCRIPTS, __doc__))
