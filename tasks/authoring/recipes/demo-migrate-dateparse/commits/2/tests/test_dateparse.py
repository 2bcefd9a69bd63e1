from datetime import date

import pytest

from parcels._vendor import dateparse


def test_parse_iso_and_format():
    assert dateparse.parse(" 2024-02-29 ") == date(2024, 2, 29)
    assert dateparse.parse("29/02/2024", fmt="%d/%m/%Y") == date(2024, 2, 29)


@pytest.mark.parametrize("text", ["", "  ", None], ids=["empty", "blank", "none"])
def test_parse_is_strict_about_empty_input(text):
    with pytest.raises(ValueError, match="no date given"):
        dateparse.parse(text)


def test_parse_rejects_garbage():
    with pytest.raises(ValueError, match="does not match"):
        dateparse.parse("2024-02-30")


def test_parse_date_is_deprecated():
    with pytest.warns(DeprecationWarning, match="use dateparse.parse"):
        assert dateparse.parse_date("2024-02-29") == date(2024, 2, 29)
