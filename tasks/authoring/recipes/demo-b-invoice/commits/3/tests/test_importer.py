import pytest

from invoicing.importer import invoice_from_csv

CSV = """
description,quantity,unit_price,category
Notebook,2,3.75,standard
Bread,3,2.40,reduced
Gift card,1,"1,000.00",zero
Pens (box),1,12.50,
"""


def test_import_lines():
    inv = invoice_from_csv("B-7", CSV)
    assert [(line.description, line.quantity, line.unit_cents, line.category) for line in inv.lines] == [
        ("Notebook", 2, 375, "standard"),
        ("Bread", 3, 240, "reduced"),
        ("Gift card", 1, 100000, "zero"),
        ("Pens (box)", 1, 1250, "standard"),
    ]
    assert inv.total == 750 + 150 + 720 + 36 + 100000 + 1250 + 250


def test_bad_amount_names_the_csv_line():
    with pytest.raises(ValueError, match="CSV line 3: not an amount: '2,4'"):
        invoice_from_csv("B-8", "description,quantity,unit_price\nNotebook,2,3.75\nBread,3,\"2,4\"\n")


def test_missing_column():
    with pytest.raises(ValueError, match="CSV line 2: missing column"):
        invoice_from_csv("B-9", "description,unit_price\nNotebook,3.75\n")
