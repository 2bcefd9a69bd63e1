from datetime import date

import pytest

from parcels._vendor import dateparse


def test_parse_date_iso_and_format():
    assert dateparse.parse_date("2024-02-29") == date(2024, 2, 29)
    assert dateparse.parse_date("29/02/2024", "%d/%m/%Y") == date(2024, 2, 29)


def test_parse_date_rejects_garbage():
    with pytest.raises(ValueError, match="does not match"):
        dateparse.parse_date("2024-02-30")
