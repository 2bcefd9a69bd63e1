from invoicing.tax import line_tax


def test_standard_rate():
    assert line_tax(1000, "standard") == 200
    assert line_tax(999, "standard") == 200


def test_reduced_and_zero_rates():
    assert line_tax(645, "reduced") == 32
    assert line_tax(12000, "zero") == 0
