"""Weather alerts."""
import json
from dataclasses import dataclass

from .errors import ApiError
from .http import API_ROOT, fetch


@dataclass(frozen=True)
class Alert:
    title: str
    severity: str
    until: str


def active_alerts(region: str, severity: str | None = None) -> list[Alert]:
    """Alerts in force in `region`, optionally only those of one severity ("minor", "severe", ...)."""
    status, body = fetch(API_ROOT + "/alerts", {"region": region, "severity": severity}, timeout=5)
    if status == 404:  # regions without an alert feed answer 404
        return []
    if status != 200:
        raise ApiError(status, "alerts")
    return [Alert(a["title"], a["severity"], a["until"]) for a in json.loads(body)["alerts"]]
