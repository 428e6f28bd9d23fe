"""Save and load an invoice as a JSON file.

File shape::

    {"discount_percent": 10,
     "items": [{"description": "Travel", "quantity": 1, "unit_price": 50.0}]}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .model import Invoice, Item


class InvoiceFormatError(ValueError):
    """The file exists but does not hold an invoice (bad JSON or wrong shape)."""


def save_invoice(invoice: Invoice, path: str | Path) -> None:
    """Write the invoice to ``path`` as JSON (OSError if the file cannot be written)."""
    data = {
        "discount_percent": invoice.discount_percent,
        "items": [
            {
                "description": item.description,
                "quantity": item.quantity,
                "unit_price": item.unit_price,
            }
            for item in invoice.items
        ],
    }
    Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def load_invoice(path: str | Path) -> Invoice:
    """Read an invoice from ``path``.

    Raises FileNotFoundError (or another OSError) if the file cannot be read, and
    InvoiceFormatError if it is not valid JSON of the shape above.
    """
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvoiceFormatError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise InvoiceFormatError(f"{path}: expected an object with an 'items' list")
    items = [_item_from_json(path, index, raw) for index, raw in enumerate(data["items"])]
    discount = _number(path, "discount_percent", data.get("discount_percent", 0))
    return Invoice(items=items, discount_percent=discount)


def _item_from_json(path: str | Path, index: int, raw: Any) -> Item:
    if not isinstance(raw, dict):
        raise InvoiceFormatError(f"{path}: items[{index}] should be an object, got {raw!r}")
    description = raw.get("description")
    if not isinstance(description, str):
        raise InvoiceFormatError(f"{path}: items[{index}].description should be a string")
    return Item(
        description=description,
        quantity=_number(path, f"items[{index}].quantity", raw.get("quantity")),
        unit_price=_number(path, f"items[{index}].unit_price", raw.get("unit_price")),
    )


def _number(path: str | Path, where: str, value: Any) -> float:
    # bool is a subclass of int, but true/false in the file is a mistake, not a number.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvoiceFormatError(f"{path}: {where} should be a number, got {value!r}")
    return float(value)
