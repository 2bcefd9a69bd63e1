"""Weather stations."""
from dataclasses import dataclass

from .errors import ApiError
from .http import client


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
        params = {"page": page} if region is None else {"region": region, "page": page}
        response = client().get("/stations", params=params)
        if response.status != 200:
            raise ApiError(response.status, "stations")
        data = response.json()
        stations += [Station.from_json(s) for s in data["items"]]
        page = data["next_page"]
    return stations


def find_station(code: str) -> Station | None:
    """The station with this code, or None if the API does not know it."""
    response = client().get(f"/stations/{code}")
    if response.status == 404:
        return None
    if response.status != 200:
        raise ApiError(response.status, "stations")
    return Station.from_json(response.json())
