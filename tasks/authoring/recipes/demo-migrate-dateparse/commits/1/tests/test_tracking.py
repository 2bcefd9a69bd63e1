from datetime import date

import pytest

from parcels.models import Parcel
from parcels.tracking import events_since, is_late, late_report


def test_events_since(record):
    parcel = Parcel.from_record(record)
    assert [e.place for e in events_since(parcel, "2024-03-06")] == ["Leeds hub", "Leeds"]


def test_events_since_rejects_bad_filter(record):
    with pytest.raises(ValueError, match="does not match"):
        events_since(Parcel.from_record(record), "06/03/2024")


def test_is_late():
    parcel = Parcel("PX-2", due=date(2024, 3, 8))
    assert not is_late(parcel, today=date(2024, 3, 8))
    assert is_late(parcel, today=date(2024, 3, 9))
    parcel.delivered = date(2024, 3, 7)
    assert not is_late(parcel, today=date(2024, 3, 20))


def test_late_report():
    parcels = [Parcel("PX-3", date(2024, 3, 1)), Parcel("PX-4", date(2024, 2, 20)), Parcel("PX-5", date(2024, 4, 1))]
    assert late_report(parcels, today=date(2024, 3, 2)) == [
        "PX-4: due 2024-02-20, registered",
        "PX-3: due 2024-03-01, registered",
    ]
