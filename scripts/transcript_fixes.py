"""The fixes the bundled develop transcripts make: each card's change to the invoice app, derived
from the current app source by small textual patches (:func:`transcript_steps.patch`, which
fails when the app changed), and what ui_missing_ids reports before the ids card's fix.
"""

from __future__ import annotations

from transcript_steps import APP, patch

from loopkit_ui.missing_ids import MissingId


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
