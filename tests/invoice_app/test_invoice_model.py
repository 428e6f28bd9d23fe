"""The pure invoice model, money formatting and JSON storage (no Qt)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from invoice_app.model import (
    Invoice,
    Item,
    format_money,
    format_number,
    parse_number,
    sample_invoice,
)
from invoice_app.storage import InvoiceFormatError, load_invoice, save_invoice


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2", 2.0), (" 1.5 ", 1.5), ("100.00", 100.0), ("abc", 0.0), ("", 0.0), ("nan", 0.0)],
)
def test_parse_number(text: str, expected: float) -> None:
    assert parse_number(text) == expected


def test_format_money_two_decimals_no_thousands_separator() -> None:
    assert format_money(1234567.891) == "1234567.89"
    assert format_money(0) == "0.00"
    assert format_money(25) == "25.00"


def test_format_number_integral_and_fraction() -> None:
    assert format_number(2.0) == "2"
    assert format_number(2) == "2"
    assert format_number(1.5) == "1.5"


def test_sample_invoice_totals() -> None:
    invoice = sample_invoice()
    assert [(i.description, i.quantity, i.unit_price) for i in invoice.items] == [
        ("Consulting", 2.0, 100.0),
        ("Travel", 1.0, 50.0),
    ]
    assert invoice.items[0].line_total == 200.0
    assert invoice.subtotal == 250.0


def test_discount_amount_is_percent_of_subtotal() -> None:
    invoice = Invoice(items=[Item("A", 4, 25.0)], discount_percent=10)
    assert invoice.discount_amount == pytest.approx(10.0)


def test_gap_total_ignores_discount() -> None:
    """GAP 1 (pinned as current behaviour): the total is the subtotal, discount not applied."""
    invoice = sample_invoice()
    invoice.discount_percent = 10
    assert invoice.discount_amount == pytest.approx(25.0)
    assert invoice.total == pytest.approx(250.0)


def test_gap_negative_and_non_numeric_input_accepted() -> None:
    """GAP 3 (pinned): negative numbers parse as they are, non-numeric text counts as 0."""
    assert parse_number("-3") == -3.0
    assert parse_number("three") == 0.0
    invoice = Invoice(items=[Item("Refund?", parse_number("-2"), parse_number("10"))])
    assert invoice.subtotal == -20.0


def test_save_load_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "invoice.json"
    items = [Item("Design", 1.5, 80.0), Item("Hosting", 3, 9.99)]
    original = Invoice(items=items, discount_percent=5)
    save_invoice(original, path)
    assert load_invoice(path) == original
    assert json.loads(path.read_text())["items"][0] == {
        "description": "Design",
        "quantity": 1.5,
        "unit_price": 80.0,
    }


def test_load_missing_file_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_invoice(tmp_path / "nope.json")


def test_load_bad_json_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    with pytest.raises(InvoiceFormatError, match=r"bad\.json is not valid JSON"):
        load_invoice(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[]", "expected an object with an 'items' list"),
        ('{"items": 3}', "expected an object with an 'items' list"),
        ('{"items": [7]}', r"items\[0\] should be an object"),
        ('{"items": [{"quantity": 1, "unit_price": 2}]}', r"items\[0\].description"),
        ('{"items": [{"description": "x", "quantity": "1", "unit_price": 2}]}', "quantity"),
        ('{"items": [{"description": "x", "quantity": true, "unit_price": 2}]}', "quantity"),
        ('{"items": [{"description": "x", "quantity": 1}]}', "unit_price should be a number"),
        ('{"items": [], "discount_percent": "ten"}', "discount_percent"),
    ],
)
def test_load_wrong_shape_raises_format_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "shape.json"
    path.write_text(content)
    with pytest.raises(InvoiceFormatError, match=message):
        load_invoice(path)
