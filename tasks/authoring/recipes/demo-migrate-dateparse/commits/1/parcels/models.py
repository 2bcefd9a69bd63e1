"""Parcels and their tracking events."""
from dataclasses import dataclass, field
from datetime import date

from ._vendor import dateparse


@dataclass(frozen=True)
class Event:
    when: date
    place: str
    status: str  # "accepted", "in_transit", "out_for_delivery", "delivered", "returned"

    @classmethod
    def from_record(cls, record: dict) -> "Event":
        return cls(dateparse.parse_date(record["date"]), record["place"], record["status"])


@dataclass
class Parcel:
    code: str
    due: date
    events: list[Event] = field(default_factory=list)
    delivered: date | None = None

    @classmethod
    def from_record(cls, record: dict) -> "Parcel":
        """Build a parcel from an API record; `delivered` is missing or empty until delivery."""
        return cls(
            code=record["code"],
            due=dateparse.parse_date(record["due"]),
            events=sorted((Event.from_record(e) for e in record.get("events", [])), key=lambda e: e.when),
            delivered=dateparse.parse_date(record.get("delivered", "")),
        )

    @property
    def status(self) -> str:
        return self.events[-1].status if self.events else "registered"
