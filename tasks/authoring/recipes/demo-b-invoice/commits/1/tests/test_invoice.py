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
