"""The Notes panel below the totals: a note to the customer, its length and a Clear button.

GAP 4 (deliberate): none of these controls has an accessible id or an object name yet, so UI
automation can reach them only by their names. The notes live while the app runs; they are
not part of the saved invoice.
"""

from __future__ import annotations

from PySide6.QtWidgets import QGroupBox, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget


class NotesPanel(QGroupBox):
    """A group box "Notes": the note's text field, its character count and "Clear notes"."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Notes", parent)
        self.text_label = QLabel("Note to the customer")
        self.text_input = QPlainTextEdit()
        self.text_input.setAccessibleName("Note to the customer")
        self.text_input.setMaximumHeight(60)
        self.text_label.setBuddy(self.text_input)
        self.text_input.textChanged.connect(self.update_count)
        self.count_label = QLabel()
        self.clear_button = QPushButton("Clear notes")
        self.clear_button.setAccessibleName("Clear notes")
        self.clear_button.clicked.connect(self.text_input.clear)

        layout = QVBoxLayout()
        layout.addWidget(self.text_label)
        layout.addWidget(self.text_input)
        layout.addWidget(self.count_label)
        layout.addWidget(self.clear_button)
        self.setLayout(layout)
        self.update_count()

    def update_count(self) -> None:
        """Show how many characters the note has."""
        count = len(self.text_input.toPlainText())
        self.count_label.setText(f"{count} character" + ("" if count == 1 else "s"))
