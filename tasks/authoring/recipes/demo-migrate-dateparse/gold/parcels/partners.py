"""Import parcels handed over by partner carriers (their CSV uses day/month/year dates)."""
import csv
import io
from datetime import timedelta

from ._vendor import dateparse
from .models import Event, Parcel

PARTNER_FORMAT = "%d/%m/%Y"
DELIVERY_DAYS = 3


def parcels_from_partner_csv(text: str) -> list[Parcel]:
    """Columns: code, shipped, depot. Due date = shipped + DELIVERY_DAYS."""
    parcels = []
    for row in csv.DictReader(io.StringIO(text.strip())):
        shipped = dateparse.parse(row["shipped"], fmt=PARTNER_FORMAT)
        event = Event(shipped, row["depot"].strip(), "accepted")
        parcels.append(Parcel(row["code"].strip(), shipped + timedelta(days=DELIVERY_DAYS), [event]))
    return parcels
