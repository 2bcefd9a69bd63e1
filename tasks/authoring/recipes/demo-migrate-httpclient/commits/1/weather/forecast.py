"""Forecasts and current conditions."""
import json
from dataclasses import dataclass

from .errors import ApiError
from .http import API_ROOT, fetch


@dataclass(frozen=True)
class Day:
    date: str
    low: float
    high: float
    summary: str


def daily_forecast(lat: float, lon: float, days: int | None = None) -> list[Day]:
    """Forecast for the next `days` days (the API's default, 7, when None)."""
    status, body = fetch(API_ROOT + "/forecast", {"lat": round(lat, 3), "lon": round(lon, 3), "days": days})
    if status != 200:
        raise ApiError(status, "forecast")
    return [Day(d["date"], d["min"], d["max"], d["summary"]) for d in json.loads(body)["daily"]]


def current_temperature(lat: float, lon: float) -> float:
    # the dashboard polls this on page load: fail fast rather than stall the page
    status, body = fetch(API_ROOT + "/current", {"lat": round(lat, 3), "lon": round(lon, 3)}, 3)
    if status != 200:
        raise ApiError(status, "current")
    return json.loads(body)["temperature"]
