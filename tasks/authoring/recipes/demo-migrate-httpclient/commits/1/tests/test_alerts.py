import pytest

from weather.alerts import Alert, active_alerts
from weather.errors import ApiError

FLOOD = {"title": "Flood warning", "severity": "severe", "until": "2024-06-02T18:00"}


def test_active_alerts(api):
    api.add("/alerts?region=north", {"alerts": [FLOOD]})
    assert active_alerts("north") == [Alert("Flood warning", "severe", "2024-06-02T18:00")]
    assert api.requests == [("/alerts?region=north", 5)]


def test_region_without_alert_feed(api):
    assert active_alerts("atlantis") == []


def test_alerts_failure(api):
    api.add("/alerts?region=north", {}, status=502)
    with pytest.raises(ApiError, match="error 502 on alerts"):
        active_alerts("north")
