"""Forecasts and current conditions."""
from dataclasses import dataclass

from .errors import ApiError
from .http import client


@dataclass(frozen=True)
class Day:
    date: str
    low: float
    high: float
    summary: str


def daily_forecast(lat: float, lon: float, days: int | None = None) -> list[Day]:
    """Forecast for the next `days` days (the API's default, 7, when None)."""
    params = {"lat": round(lat, 3), "lon": round(lon, 3)}
    if days is not None:
        params["days"] = days
    response = client().get("/forecast", params=params)
    if response.status != 200:
        raise ApiError(response.status, "forecast")
    return [Day(d["date"], d["min"], d["max"], d["summary"]) for d in response.json()["daily"]]


def current_temperature(lat: float, lon: float) -> float:
    # the dashboard polls this on page load: fail fast rather than stall the page
    response = client().get("/current", params={"lat": round(lat, 3), "lon": round(lon, 3)}, timeout=3)
    if response.status != 200:
        raise ApiError(response.status, "current")
    return response.json()["temperature"]
