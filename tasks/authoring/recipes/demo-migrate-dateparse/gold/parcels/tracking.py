"""Questions the dashboard asks about parcels."""
from datetime import date

from ._vendor import dateparse
from .models import Event, Parcel


def events_since(parcel: Parcel, since: str) -> list[Event]:
    """Events on or after the ISO date `since` (as typed in the dashboard's filter box)."""
    cutoff = dateparse.parse(since)
    return [e for e in parcel.events if e.when >= cutoff]


def is_late(parcel: Parcel, today: date) -> bool:
    """Delivered after its due date, or still undelivered past it."""
    if parcel.delivered is not None:
        return parcel.delivered > parcel.due
    return today > parcel.due


def late_report(parcels: list[Parcel], today: date) -> list[str]:
    """One line per late parcel, most overdue first."""
    late = sorted((p for p in parcels if is_late(p, today)), key=lambda p: p.due)
    return [f"{p.code}: due {dateparse.format_date(p.due)}, {p.status}" for p in late]
