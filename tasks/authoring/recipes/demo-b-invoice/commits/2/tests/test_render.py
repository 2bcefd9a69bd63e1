from invoicing.invoice import Invoice
from invoicing.render import render


def test_render():
    inv = Invoice("2024-001")
    inv.add("Notebook", 2, "3.75")
    inv.add("Bread", 3, "2.40", "reduced")
    assert render(inv).splitlines() == [
        "Invoice 2024-001",
        "   2 x Notebook                       $7.50",
        "   3 x Bread                          $7.20",
        "Subtotal                             $14.70",
        "VAT standard 20%                      $1.50",
        "VAT reduced 5%                        $0.36",
        "Total                                $16.56",
    ]
