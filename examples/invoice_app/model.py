"""The invoice model: items, discount and totals. Pure Python, no Qt."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


def parse_number(text: str) -> float:
    """Read a number typed by the user; text that is not a finite number counts as 0."""
    try:
        value = float(text.strip())
    except ValueError:
        return 0.0
    # float() also accepts "nan" and "inf"; they are not amounts anyone means to type.
    return value if math.isfinite(value) else 0.0


def format_money(value: float) -> str:
    """Two decimals, "." as separator, no thousands separator (independent of the locale)."""
    return f"{value:.2f}"


def format_number(value: float) -> str:
    """A quantity or percentage as the user would type it: "2", "1.5"."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


@dataclass
class Item:
    """One line of the invoice."""

    description: str
    quantity: float
    unit_price: float

    @property
    def line_total(self) -> float:
        """Quantity times unit price."""
        return self.quantity * self.unit_price


@dataclass
class Invoice:
    """The items of an invoice and a discount in percent of the subtotal."""

    items: list[Item] = field(default_factory=list)
    discount_percent: float = 0.0

    @property
    def subtotal(self) -> float:
        """Sum of the line totals."""
        return sum(item.line_total for item in self.items)

    @property
    def discount_amount(self) -> float:
        """The discount in money: discount_percent of the subtotal."""
        return self.subtotal * self.discount_percent / 100

    @property
    def total(self) -> float:
        """The amount to pay."""
        return self.subtotal


def sample_invoice() -> Invoice:
    """The invoice the app shows at start."""
    return Invoice(items=[Item("Consulting", 2.0, 100.0), Item("Travel", 1.0, 50.0)])
