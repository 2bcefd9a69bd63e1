import pytest

from invoicing.invoice import Invoice


def test_add_lines_and_subtotal():
    inv = Invoice("A-1")
    inv.add("Notebook", 2, "3.75")
    inv.add("Pens (box)", 1, "12.50")
    assert [line.net for line in inv.lines] == [750, 1250]
    assert inv.subtotal == 2000


def test_zero_quantity_is_rejected():
    with pytest.raises(ValueError, match="quantity must not be 0"):
        Invoice("A-2").add("Nothing", 0, "1.00")


def test_totals_with_vat():
    inv = Invoice("A-3")
    inv.add("Notebook", 2, "3.75")
    inv.add("Bread", 3, "2.40", "reduced")
    inv.add("Stamps", 10, "0.99", "zero")
    assert (inv.subtotal, inv.tax_total, inv.total) == (750 + 720 + 990, 150 + 36, 2646)
    assert inv.tax_by_category() == {"standard": 150, "reduced": 36, "zero": 0}


def test_credit_line():
    inv = Invoice("A-4")
    inv.add("Desk lamp", 1, "49.90")
    inv.add("Returned lamp", -1, "49.90")
    assert (inv.subtotal, inv.tax_total) == (0, 0)


def test_unknown_category_is_rejected_when_added():
    with pytest.raises(ValueError, match="unknown VAT category 'luxury'"):
        Invoice("A-5").add("Watch", 1, "120.00", "luxury")
