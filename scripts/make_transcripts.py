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

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loopkit.cards.config import DEFAULT_CORE_TOOLS, DEFAULT_DEFER_TOOLS
from loopkit.middleware.tool_disclosure import LOAD_TOOLS, ToolDisclosure
from loopkit_tools import ToolsConfig, page_lines
from loopkit_ui.missing_ids import MissingId, id_task

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "examples" / "invoice_app"
OUT = ROOT / "src" / "loopkit" / "demo" / "transcripts"


#: The (old, new) pairs of the patches made since the last :func:`edits` (one fix at a time).
PATCHES: list[tuple[str, str]] = []


def patch(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise SystemExit(f"make_transcripts: the app changed; cannot find exactly one {old!r}")
    PATCHES.append((old, new))
    return text.replace(old, new)


def edits(file: str, fix: Callable[[], str]) -> list[dict[str, Any]]:
    """The edit_file calls that make ``fix``'s change to ``file``, one per patch, in order (each
    ``old`` is unique in the file as it is at that edit, as :func:`patch` checks)."""
    PATCHES.clear()
    fix()
    path = f"invoice_app/{file}"
    return [
        call("edit_file", ok(f"Edited {path}"), path=path, old=old, new=new) for old, new in PATCHES
    ]


# -- the fixes -------------------------------------------------------------------------------


def fixed_model() -> str:
    return patch(
        (APP / "model.py").read_text(encoding="utf-8"),
        "        return self.subtotal\n",
        "        return self.subtotal - self.discount_amount\n",
    )


def fixed_delete() -> str:
    text = (APP / "main_window.py").read_text(encoding="utf-8")
    text = patch(text, "    QMenu,\n", "    QMenu,\n    QMessageBox,\n")
    return patch(
        text,
        '''    def delete_selected(self) -> None:
        """Remove the selected rows; without a selection nothing happens."""
        rows = sorted(index.row() for index in self.table.selectionModel().selectedRows())
        if not rows:
            return
        for row in reversed(rows):
            self.table.removeRow(row)
        self.update_totals()
''',
        '''    def delete_selected(self) -> None:
        """Ask, then remove the selected rows; without a selection nothing happens."""
        rows = sorted(index.row() for index in self.table.selectionModel().selectedRows())
        if not rows:
            return
        if not self._confirm_delete([self._cell_text(row, DESCRIPTION) for row in rows]):
            return
        for row in reversed(rows):
            self.table.removeRow(row)
        self.update_totals()

    def _confirm_delete(self, descriptions: list[str]) -> bool:
        """Ask whether the items named ``descriptions`` should be deleted."""
        question = (
            f'Delete the item "{descriptions[0]}"?'
            if len(descriptions) == 1
            else f"Delete these {len(descriptions)} items: {', '.join(descriptions)}?"
        )
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Delete item",
            question,
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            self,
        )
        _identify(box, "ConfirmDeleteDialog", "Delete item")
        _identify(box.button(QMessageBox.StandardButton.Yes), "ConfirmDeleteYesButton", "Yes")
        _identify(box.button(QMessageBox.StandardButton.No), "ConfirmDeleteNoButton", "No")
        text = box.findChild(QLabel, "qt_msgbox_label")
        if text is not None:
            _identify(text, "ConfirmDeleteText")
        box.setDefaultButton(QMessageBox.StandardButton.No)
        return box.exec() == QMessageBox.StandardButton.Yes
''',
    )


def fixed_validation() -> str:
    text = (APP / "main_window.py").read_text(encoding="utf-8")
    text = patch(text, "import logging\n", "import logging\nimport math\n")
    text = patch(
        text,
        """    def _on_item_changed(self, cell: QTableWidgetItem) -> None:
        if cell.column() != LINE_TOTAL:
            self.update_totals()
""",
        """    def _on_item_changed(self, cell: QTableWidgetItem) -> None:
        if cell.column() in (QUANTITY, UNIT_PRICE):
            problem = _number_problem(cell.text())
            with QSignalBlocker(self.table):
                if problem is not None:
                    # Refused: back to the last valid value, and say why.
                    cell.setText(cell.data(Qt.ItemDataRole.UserRole) or "0")
                else:
                    cell.setData(Qt.ItemDataRole.UserRole, cell.text())
            if problem is not None:
                self.show_error(f"{COLUMNS[cell.column()]}: {problem}")
                return
            self.error_label.hide()
        if cell.column() != LINE_TOTAL:
            self.update_totals()
""",
    )
    text = patch(
        text,
        """def _number_cell(text: str) -> QTableWidgetItem:
    cell = QTableWidgetItem(text)
""",
        '''def _number_problem(text: str) -> str | None:
    """Why ``text`` is not a valid quantity or price, or None when it is."""
    try:
        value = float(text.strip())
    except ValueError:
        return f'"{text}" is not a number'
    if not math.isfinite(value):
        return f'"{text}" is not a number'
    if value < 0:
        return f"{text.strip()} is negative; enter 0 or more"
    return None


def _number_cell(text: str) -> QTableWidgetItem:
    cell = QTableWidgetItem(text)
    cell.setData(Qt.ItemDataRole.UserRole, text)  # the last valid value, restored on refusal
''',
    )
    return text


#: The Notes panel's controls (gap 4) in tree order: attribute (None: the panel itself), new id.
NOTES_IDS = [
    (None, "NotesPanel"),
    ("text_label", "NotesTextInputLabel"),
    ("text_input", "NotesTextInput"),
    ("count_label", "NotesCharacterCountLabel"),
    ("clear_button", "NotesClearButton"),
]


def id_lines(attribute: str | None, ident: str) -> str:
    """The two lines that give a control its id (CODING.md: the accessible id, same object name)."""
    owner = "self" if attribute is None else f"self.{attribute}"
    return (
        f'        {owner}.setObjectName("{ident}")\n'
        f'        {owner}.setAccessibleIdentifier("{ident}")\n'
    )


def fixed_notes() -> str:
    """notes_panel.py with an id line pair after the line that creates each control."""
    text = (APP / "notes_panel.py").read_text(encoding="utf-8")
    anchors = {
        None: '        super().__init__("Notes", parent)\n',
        "text_label": '        self.text_label = QLabel("Note to the customer")\n',
        "text_input": "        self.text_input = QPlainTextEdit()\n",
        "count_label": "        self.count_label = QLabel()\n",
        "clear_button": '        self.clear_button = QPushButton("Clear notes")\n',
    }
    for attribute, ident in NOTES_IDS:
        anchor = anchors[attribute]
        text = patch(text, anchor, anchor + id_lines(attribute, ident))
    return text


def notes_missing_ids() -> list[MissingId]:
    """What ui_missing_ids reports for the Notes panel of the unfixed app."""
    where = "#InvoiceWindow / #InvoicePanel / panel 'Notes'"
    panel = MissingId(
        role="panel",
        name="Notes",
        window="Invoice Editor",
        parent="filler '' #InvoicePanel",
        parent_id="InvoicePanel",
        index=8,
        path=where,
    )
    children = [
        ("label", "Note to the customer", []),
        ("text", "Note to the customer", ["editable"]),
        ("label", "0 characters", []),
        ("push button", "Clear notes", []),
    ]
    return [panel] + [
        MissingId(
            role=role,
            name=name,
            window="Invoice Editor",
            parent="panel 'Notes'",
            parent_id="InvoicePanel",
            index=index,
            path=f"{where} / {role} {name!r}",
            states=states,
        )
        for index, (role, name, states) in enumerate(children)
    ]


# -- turns -----------------------------------------------------------------------------------


def call(name: str, expect: dict[str, Any] | None = None, /, **arguments: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "arguments": arguments}
    if expect:
        c["expect"] = expect
    return c


def ok(*fragments: str) -> dict[str, Any]:
    """The result must not be an error and must contain every fragment."""
    return {"error": False, "contains": list(fragments)}


def acted(*fragments: str, **subset: Any) -> dict[str, Any]:
    """An action's JSON answer: success and the fields given (a subset), containing fragments."""
    return {"error": False, "json": {"success": True, **subset}, "contains": list(fragments)}


NO_WINDOW_OPENED = {"windows": {"opened": []}}


def text_of(target: str, *fragments: str) -> dict[str, Any]:
    return call("ui_get_text", ok(*fragments), target=target)


def named(c: dict[str, Any], ident: str) -> dict[str, Any]:
    """``c`` with the call id ``ident``: a check the run cites as evidence (record_evidence)."""
    return {**c, "id": ident}


def evidence(**criteria: list[str]) -> dict[str, Any]:
    """The turn that records, per criterion (``C1=[ids]``), the checks that show it."""
    return turn(
        *(
            call("record_evidence", ok(f"{criterion}: evidence recorded"), criterion=criterion,
                 calls=ids)
            for criterion, ids in criteria.items()
        ),
        text="Recording the checks that show each criterion, for the runner to check and replay.",
    )  # fmt: skip


def turn(*calls: dict[str, Any], text: str = "") -> dict[str, Any]:
    t: dict[str, Any] = {"calls": list(calls)}
    if text:
        t["text"] = text
    return t


def read_in_parts(path: str, marker: str) -> list[dict[str, Any]]:
    """read_file calls for every part of a file, as the tool pages it (parts of whole lines)."""
    text = (ROOT / "examples" / path).read_text(encoding="utf-8")
    limit = ToolsConfig().max_read_chars
    calls, start, column = [], 1, 1
    while True:
        part = page_lines(text, start, None, limit, start_column=column)
        note = part.rsplit("\n", 1)[-1]
        fragments = [marker] if marker in part else []
        arguments: dict[str, Any] = {"path": path}
        if start != 1:
            arguments["start_line"] = start
        if column != 1:
            arguments["start_column"] = column
        calls.append(
            call(
                "read_file", ok(*fragments, *([note] if note.startswith("[") else [])), **arguments
            )
        )
        where = re.search(r"start_line=(\d+)(?:, start_column=(\d+))?", note)
        if where is None:
            return calls
        start, column = int(where.group(1)), int(where.group(2) or 1)


#: Lines read from the top of a long file (its docstring and imports), and around each place
#: a fix changes.
HEAD_LINES = 30
CONTEXT_LINES = 8


def first_line(text: str) -> str:
    return next(line.strip() for line in text.splitlines() if line.strip())


def read_where_the_fix_goes(file: str, fix: Callable[[], str]) -> list[dict[str, Any]]:
    """The turns that read what the fix needs: a file that fits in one read_file part whole; a
    longer one as a careful model does, by finding where each change goes (search_files, one
    search for the first line of each patched piece), then reading the file's top and each
    place with some lines around it (read_file with start_line and max_lines)."""
    path = f"invoice_app/{file}"
    text = (ROOT / "examples" / path).read_text(encoding="utf-8")
    PATCHES.clear()
    fix()
    patches = list(PATCHES)
    if len(text) <= ToolsConfig().max_read_chars:
        return [turn(*read_in_parts(path, first_line(patches[0][0])))]
    searches, ranges = [], [(1, HEAD_LINES)]
    for old, _new in patches:
        if text.count(old) != 1:
            continue  # a piece that an earlier patch makes: read with that one
        needle = first_line(old)
        definition = re.match(r"(?:async )?(?:def|class) \w+", needle)
        needle = definition.group(0) if definition else needle  # as one would search for it
        start = text[: text.index(old)].count("\n") + 1
        line = start + next(i for i, s in enumerate(old.splitlines()) if s.strip())
        end = start + old.rstrip("\n").count("\n")
        searches.append(
            call("search_files", ok(f"{path}:{line}: "), text=needle, folder="invoice_app")
        )
        ranges.append((max(1, start - CONTEXT_LINES), end + CONTEXT_LINES))
    merged: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    reads = []
    for first, last in merged:
        shown = [
            first_line(old) for old, _ in patches if first_line(old) in _lines(text, first, last)
        ]
        arguments: dict[str, Any] = {"path": path, "max_lines": last - first + 1}
        if first != 1:
            arguments["start_line"] = first
        reads.append(call("read_file", ok(*shown), **arguments))
    return [
        turn(*searches, text=f"{file} is long: finding where the change goes."),
        turn(*reads),
    ]


def _lines(text: str, first: int, last: int) -> str:
    return "\n".join(text.splitlines()[first - 1 : last])


def common_start(file: str, fix: Callable[[], str]) -> list[dict[str, Any]]:
    return [
        turn(
            call(
                "list_files",
                ok("invoice_app/main_window.py", "invoice_app/model.py"),
                folder="invoice_app",
            ),
            call("read_file", ok("Every control has an accessible id"), path="docs/CODING.md"),
            text="I will look at the app's files first.",
        ),
        *read_where_the_fix_goes(file, fix),
        turn(call("start_app", ok("The app is running")), text="Now the live app."),
        turn(call("ui_list_windows", ok("Invoice Editor"))),
    ]


def build_and_restart() -> list[dict[str, Any]]:
    return [
        turn(call("stop_app", ok("no process of it is left"))),
        turn(call("build_app", ok("Build succeeded"))),
        turn(call("start_app", ok("The app is running")), text="Verifying live."),
    ]


def finish(
    title: str, body: str, file: str, summary: str, note: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Screenshot, stop, (a note,) commit, the RESULT. With a note the commit takes the note,
    its topic file and the router along."""
    committed = ok("1 file(s)", f"invoice_app/{file}")
    noting = []
    if note is not None:
        noting = [turn(note, text="Keeping what I checked for the next run.")]
        topic = note["arguments"]["topic"]
        committed = ok("4 file(s)", f"invoice_app/{file}", "notes/README.md", f"notes/{topic}.md")
    return [
        turn(call("ui_screenshot", ok(".png"))),
        turn(call("stop_app", ok("no process of it is left"))),
        *noting,
        turn(call("git_commit", committed, message=f"card: {title}\n\n{body}")),
        {"text": f"{summary}\n\nRESULT: done"},
    ]


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
TRANSCRIPTS = {
    "total-ignores-the-discount": discount_card,
    "delete-asks-for-confirmation": delete_card,
    "validate-quantity-and-price": validation_card,
    "document/delete-asks-for-confirmation": delete_document,
    "every-control-has-an-accessible-id": ids_card,
    # A subagent's transcript lies in a folder named after its tool group, beside the main one.
    "id_fixer/every-control-has-an-accessible-id": id_fixer_child,
}
# The test role's transcripts are built in their own module (it uses the helpers above).
from tester_transcripts import TEST_TRANSCRIPTS  # noqa: E402

TRANSCRIPTS.update({f"test/{name}": make for name, make in TEST_TRANSCRIPTS.items()})
# The cards added for the evals, and the test runs derived from the cards' check scripts.
from more_transcripts import MORE_TRANSCRIPTS  # noqa: E402

TRANSCRIPTS.update(MORE_TRANSCRIPTS)


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
    first use): a
    careful model loads what it will need once, early, while the prompt is short (a load changes
    the tools offered, which a provider's prompt cache sees as a new prompt)."""
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


def render(name: str) -> str:
    core, defer = DISCLOSURE.get(name, (DEFAULT_CORE_TOOLS, DEFAULT_DEFER_TOOLS))
    transcript = load_deferred_tools(TRANSCRIPTS[name](), core, defer)
    return json.dumps(transcript, indent=1, ensure_ascii=False) + "\n"


def main(names: list[str] | None = None) -> int:
    """Write (or with --check, check) the transcripts ``names`` (default: all)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the bundled files")
    args = parser.parse_args()
    stale = []
    for name in names if names is not None else list(TRANSCRIPTS):
        target = OUT / f"{name}.json"
        text = render(name)
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


if __name__ == "__main__":
    sys.exit(main())
