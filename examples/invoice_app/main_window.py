"""The main window: the items table (with its context menu), the discount, the totals and
Save / Open.

Every control has an object name and an accessible identifier (the same id), so UI
automation finds it by id; the context menu's actions have object names (Qt reports those as
their ids). The table is the source of truth for what the user typed; the totals are computed
from an Invoice read back from it on every change.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QPoint, QSignalBlocker, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMenu,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from .model import Invoice, Item, format_money, format_number, parse_number, sample_invoice
from .notes_panel import NotesPanel
from .storage import load_invoice, save_invoice

WINDOW_TITLE = "Invoice Editor"
COLUMNS = ["Description", "Quantity", "Unit price", "Line total"]
DESCRIPTION, QUANTITY, UNIT_PRICE, LINE_TOTAL = range(4)


def _identify(widget: QWidget, ident: str, name: str | None = None) -> None:
    """Give a widget its id (object name + accessible id) and, if given, an accessible name."""
    widget.setObjectName(ident)
    widget.setAccessibleIdentifier(ident)
    if name is not None:
        widget.setAccessibleName(name)


class MainWindow(QMainWindow):
    """The Invoice Editor window."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        super().__init__()
        self.logger = logger or logging.getLogger("invoice_app")
        self.setWindowTitle(WINDOW_TITLE)
        _identify(self, "InvoiceWindow", WINDOW_TITLE)

        self.table = QTableWidget(0, len(COLUMNS))
        _identify(self.table, "ItemsTable", "Items")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.horizontalHeader().setSectionResizeMode(
            DESCRIPTION, QHeaderView.ResizeMode.Stretch
        )
        self.table.itemChanged.connect(self._on_item_changed)
        self.items_menu = self._build_items_menu()

        self.add_button = QPushButton("Add item")
        _identify(self.add_button, "AddItemButton", "Add item")
        self.add_button.clicked.connect(self.add_item)
        self.delete_button = QPushButton("Delete selected")
        _identify(self.delete_button, "DeleteSelectedButton", "Delete selected")
        self.delete_button.clicked.connect(self.delete_selected)

        discount_label = QLabel("Discount (%)")
        _identify(discount_label, "DiscountInputLabel")
        self.discount_input = QLineEdit("0")
        _identify(self.discount_input, "DiscountInput", "Discount (%)")
        discount_label.setBuddy(self.discount_input)
        self.discount_input.textChanged.connect(self.update_totals)

        self.subtotal_label = QLabel()
        _identify(self.subtotal_label, "SubtotalLabel")
        self.discount_amount_label = QLabel()
        _identify(self.discount_amount_label, "DiscountAmountLabel")
        self.total_label = QLabel()
        _identify(self.total_label, "TotalLabel")

        file_label = QLabel("File")
        _identify(file_label, "FilePathInputLabel")
        self.file_path_input = QLineEdit()
        _identify(self.file_path_input, "FilePathInput", "File")
        file_label.setBuddy(self.file_path_input)
        self.save_button = QPushButton("Save")
        _identify(self.save_button, "SaveButton", "Save")
        self.save_button.clicked.connect(self.save_file)
        self.open_button = QPushButton("Open")
        _identify(self.open_button, "OpenButton", "Open")
        self.open_button.clicked.connect(self.open_file)

        self.status_label = QLabel()
        _identify(self.status_label, "StatusLabel")
        self.error_label = QLabel()
        _identify(self.error_label, "ErrorLabel")
        self.error_label.setStyleSheet("color: #b00020;")
        self.error_label.hide()

        self.notes_panel = NotesPanel()  # gap 4: its controls have no ids

        self._build_layout(discount_label, file_label)
        self.set_invoice(sample_invoice())
        self.resize(640, 600)

    def _build_items_menu(self) -> QMenu:
        """The items table's context menu: Duplicate item, Delete item, Select All."""
        menu = QMenu(self.table)
        _identify(menu, "ItemsContextMenu", "Item actions")
        self._menu_row = -1
        self.duplicate_action = menu.addAction("Duplicate item")
        self.duplicate_action.setObjectName("DuplicateItemAction")
        self.duplicate_action.triggered.connect(self.duplicate_item)
        self.delete_action = menu.addAction("Delete item")
        self.delete_action.setObjectName("DeleteItemAction")
        self.delete_action.triggered.connect(self.delete_item)
        select_all = menu.addAction("Select All")
        select_all.setObjectName("SelectAllAction")
        select_all.triggered.connect(self.table.selectAll)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._show_items_menu)
        return menu

    def _show_items_menu(self, pos: QPoint) -> None:
        # The row under the pointer is the one Duplicate and Delete act on.
        self._menu_row = self.table.indexAt(pos).row()
        on_row = self._menu_row >= 0
        self.duplicate_action.setEnabled(on_row)
        self.delete_action.setEnabled(on_row)
        self.items_menu.popup(self.table.viewport().mapToGlobal(pos))

    def _build_layout(self, discount_label: QLabel, file_label: QLabel) -> None:
        buttons = QHBoxLayout()
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.delete_button)
        buttons.addStretch()

        discount = QHBoxLayout()
        discount.addWidget(discount_label)
        discount.addWidget(self.discount_input)
        discount.addStretch()

        file_row = QHBoxLayout()
        file_row.addWidget(file_label)
        file_row.addWidget(self.file_path_input, 1)
        file_row.addWidget(self.save_button)
        file_row.addWidget(self.open_button)

        layout = QVBoxLayout()
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        layout.addLayout(discount)
        for label in (self.subtotal_label, self.discount_amount_label, self.total_label):
            layout.addWidget(label)
        layout.addWidget(self.notes_panel)
        layout.addLayout(file_row)
        layout.addWidget(self.status_label)
        layout.addWidget(self.error_label)

        central = QWidget()
        _identify(central, "InvoicePanel")
        central.setLayout(layout)
        self.setCentralWidget(central)

    # --- the invoice in the table -------------------------------------------------------

    def invoice(self) -> Invoice:
        """The invoice as currently shown (non-numeric cells count as 0)."""
        items = [
            Item(
                description=self._cell_text(row, DESCRIPTION),
                quantity=parse_number(self._cell_text(row, QUANTITY)),
                unit_price=parse_number(self._cell_text(row, UNIT_PRICE)),
            )
            for row in range(self.table.rowCount())
        ]
        return Invoice(items=items, discount_percent=parse_number(self.discount_input.text()))

    def set_invoice(self, invoice: Invoice) -> None:
        """Show ``invoice`` in the table and the discount field."""
        with QSignalBlocker(self.table):
            self.table.setRowCount(0)
            for item in invoice.items:
                self._append_row(item)
        with QSignalBlocker(self.discount_input):
            self.discount_input.setText(format_number(invoice.discount_percent))
        self.update_totals()

    def _append_row(self, item: Item) -> int:
        return self._insert_row(self.table.rowCount(), item)

    def _insert_row(self, row: int, item: Item) -> int:
        self.table.insertRow(row)
        self.table.setItem(row, DESCRIPTION, QTableWidgetItem(item.description))
        self.table.setItem(row, QUANTITY, _number_cell(format_number(item.quantity)))
        self.table.setItem(row, UNIT_PRICE, _number_cell(format_money(item.unit_price)))
        line_total = _number_cell("")
        line_total.setFlags(line_total.flags() & ~Qt.ItemFlag.ItemIsEditable)
        self.table.setItem(row, LINE_TOTAL, line_total)
        return row

    def _cell_text(self, row: int, column: int) -> str:
        cell = self.table.item(row, column)
        return cell.text() if cell is not None else ""

    def _on_item_changed(self, cell: QTableWidgetItem) -> None:
        if cell.column() != LINE_TOTAL:
            self.update_totals()

    def update_totals(self) -> None:
        """Recompute the line totals and the totals labels from the table."""
        invoice = self.invoice()
        # Writing the line totals would fire itemChanged again.
        with QSignalBlocker(self.table):
            for row, item in enumerate(invoice.items):
                cell = self.table.item(row, LINE_TOTAL)
                if cell is not None:
                    cell.setText(format_money(item.line_total))
        self.subtotal_label.setText(f"Subtotal: {format_money(invoice.subtotal)}")
        self.discount_amount_label.setText(f"Discount: {format_money(invoice.discount_amount)}")
        self.total_label.setText(f"Total: {format_money(invoice.total)}")

    # --- buttons ------------------------------------------------------------------------

    def add_item(self) -> None:
        """Append a new item row and select it."""
        with QSignalBlocker(self.table):
            row = self._append_row(Item("New item", 1, 0.0))
        self.table.selectRow(row)
        self.update_totals()

    def delete_selected(self) -> None:
        """Remove the selected rows; without a selection nothing happens."""
        rows = sorted(index.row() for index in self.table.selectionModel().selectedRows())
        if not rows:
            return
        for row in reversed(rows):
            self.table.removeRow(row)
        self.update_totals()

    def duplicate_item(self) -> None:
        """Insert a copy of the item the context menu was opened on, below it, and select it."""
        row = self._menu_row
        if not 0 <= row < self.table.rowCount():
            return
        with QSignalBlocker(self.table):
            copy = self._insert_row(row + 1, self.invoice().items[row])
        self.table.selectRow(copy)
        self.update_totals()

    def delete_item(self) -> None:
        """Delete the item the context menu was opened on (as Delete selected does)."""
        row = self._menu_row
        if not 0 <= row < self.table.rowCount():
            return
        self.table.selectRow(row)
        self.delete_selected()

    def save_file(self) -> None:
        """Write the invoice to the path in the File field."""
        path = self.file_path_input.text().strip()
        if not path:
            self.show_error("Enter a file path first.")
            return
        try:
            save_invoice(self.invoice(), path)
        except OSError as exc:
            self.show_error(f"Cannot save {path}: {exc.strerror or exc}")
            return
        self.logger.info("Saved to %s", path)
        self.show_status(f"Saved to {path}")

    def open_file(self) -> None:
        """Read the invoice from the path in the File field.

        A missing or unreadable file is reported in the error label. A malformed file raises
        InvoiceFormatError, which is not caught here: it reaches the crash dialog.
        """
        path = self.file_path_input.text().strip()
        if not path:
            self.show_error("Enter a file path first.")
            return
        try:
            invoice = load_invoice(path)
        except FileNotFoundError:
            self.show_error(f"File not found: {path}")
            return
        except OSError as exc:
            self.show_error(f"Cannot open {path}: {exc.strerror or exc}")
            return
        self.set_invoice(invoice)
        self.logger.info("Opened %s", path)
        self.show_status(f"Opened {path}")

    # --- messages -----------------------------------------------------------------------

    def show_status(self, text: str) -> None:
        """Show ``text`` in the status label and hide any previous error."""
        self.status_label.setText(text)
        self.error_label.hide()

    def show_error(self, text: str) -> None:
        """Show a handled error in the error label (logged as a warning: it is not a crash)."""
        self.logger.warning("%s", text)
        self.error_label.setText(text)
        self.error_label.show()


def _number_cell(text: str) -> QTableWidgetItem:
    cell = QTableWidgetItem(text)
    cell.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return cell
