"""Weather stations."""
import json
from dataclasses import dataclass

from .errors import ApiError
from .http import API_ROOT, fetch


@dataclass(frozen=True)
class Station:
    code: str
    name: str
    region: str

    @classmethod
    def from_json(cls, data: dict) -> "Station":
        return cls(data["code"], data["name"], data["region"])


def list_stations(region: str | None = None) -> list[Station]:
    """All stations (only those in `region` if given), following the API's pagination."""
    stations, page = [], 1
    while page:
        status, body = fetch(API_ROOT + "/stations", {"region": region, "page": page})
        if status != 200:
            raise ApiError(status, "stations")
        data = json.loads(body)
        stations += [Station.from_json(s) for s in data["items"]]
        page = data["next_page"]
    return stations


def find_station(code: str) -> Station | None:
    """The station with this code, or None if the API does not know it."""
    status, body = fetch(f"{API_ROOT}/stations/{code}")
    if status == 404:
        return None
    if status != 200:
        raise ApiError(status, "stations")
    return Station.from_json(json.loads(body))
