from datetime import date

from parcels.partners import parcels_from_partner_csv


def test_partner_csv_uses_day_first_dates():
    text = """
code,shipped,depot
PX-9001, 02/03/2024 ,Depot 7
PX-9002,28/02/2024,Depot 2
"""
    first, second = parcels_from_partner_csv(text)
    assert (first.code, first.due, first.events[0].when, first.events[0].place) == (
        "PX-9001", date(2024, 3, 5), date(2024, 3, 2), "Depot 7"
    )
    assert second.due == date(2024, 3, 2)
    assert second.status == "accepted"
