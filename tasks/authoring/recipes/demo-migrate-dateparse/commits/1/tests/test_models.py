from datetime import date

from parcels.models import Event, Parcel


def test_parcel_from_record_sorts_events(record):
    parcel = Parcel.from_record(record)
    assert parcel.due == date(2024, 3, 8)
    assert [e.when.day for e in parcel.events] == [5, 6, 9]
    assert parcel.status == "out_for_delivery"
    assert parcel.delivered is None


def test_delivered_date(record):
    record["delivered"] = "2024-03-10"
    assert Parcel.from_record(record).delivered == date(2024, 3, 10)


def test_empty_delivered_means_not_delivered(record):
    record["delivered"] = ""
    assert Parcel.from_record(record).delivered is None


def test_event_from_record():
    event = Event.from_record({"date": "2024-03-05", "place": "Depot 4", "status": "accepted"})
    assert event == Event(date(2024, 3, 5), "Depot 4", "accepted")


def test_new_parcel_is_registered():
    assert Parcel("PX-1", date(2024, 1, 1)).status == "registered"
