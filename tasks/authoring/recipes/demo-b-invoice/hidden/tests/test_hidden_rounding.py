from invoicing.importer import invoice_from_csv
from invoicing.money import parse_amount
from invoicing.render import render
from invoicing.tax import line_tax


def test_parse_amount_keeps_every_cent():
    assert parse_amount("0.29") == 29
    assert parse_amount("19.99") == 1999
    assert parse_amount("$1.15") == 115
    assert parse_amount("-0.58") == -58
    assert parse_amount("1,000.57") == 100057


def test_line_tax_rounds_half_cents_up():
    assert line_tax(250, "reduced") == 13  # 12.5 cents
    assert line_tax(1050, "reduced") == 53  # 52.5 cents
    assert line_tax(-250, "reduced") == -13  # a credit line mirrors its charge
    assert line_tax(4210, "standard") == 842
    assert line_tax(1999, "standard") == 400


def test_invoice_totals_to_the_cent():
    inv = invoice_from_csv("2024-017", "description,quantity,unit_price,category\n"
                                       "Paper cups,10,0.29,reduced\nCoffee beans,3,19.99,standard\n")
    assert render(inv).splitlines()[3:] == [
        "Subtotal                             $62.87",
        "VAT reduced 5%                        $0.15",
        "VAT standard 20%                     $11.99",
        "Total                                $75.01",
    ]
