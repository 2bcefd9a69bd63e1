import pytest

from invoicing.money import format_cents, parse_amount


@pytest.mark.parametrize(
    "text, cents",
    [("12.50", 1250), ("3", 300), ("$4.25", 425), ("-4.25", -425), (" 1,234.00 ", 123400), ("9.9", 990)],
    ids=["plain", "whole", "symbol", "negative", "thousands", "one-decimal"],
)
def test_parse_amount(text, cents):
    assert parse_amount(text) == cents


@pytest.mark.parametrize("text", ["", "abc", "1.234", "12,34", "--3", "1,2345.00"])
def test_parse_amount_rejects(text):
    with pytest.raises(ValueError, match="not an amount"):
        parse_amount(text)


def test_format_cents():
    assert format_cents(123456) == "$1,234.56"
    assert format_cents(7) == "$0.07"
    assert format_cents(-5) == "-$0.05"
    assert format_cents(0, symbol="EUR ") == "EUR 0.00"
