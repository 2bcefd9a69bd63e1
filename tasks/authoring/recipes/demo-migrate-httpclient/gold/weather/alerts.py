"""Weather alerts."""
from dataclasses import dataclass

from .errors import ApiError
from .http import client


@dataclass(frozen=True)
class Alert:
    title: str
    severity: str
    until: str


def active_alerts(region: str, severity: str | None = None) -> list[Alert]:
    """Alerts in force in `region`, optionally only those of one severity ("minor", "severe", ...)."""
    params = {"region": region} if severity is None else {"region": region, "severity": severity}
    response = client().get("/alerts", params=params, timeout=5)
    if response.status == 404:  # regions without an alert feed answer 404
        return []
    if response.status != 200:
        raise ApiError(response.status, "alerts")
    return [Alert(a["title"], a["severity"], a["until"]) for a in response.json()["alerts"]]
