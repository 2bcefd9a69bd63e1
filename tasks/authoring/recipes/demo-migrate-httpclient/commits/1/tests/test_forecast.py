import pytest

from weather.errors import ApiError
from weather.forecast import Day, current_temperature, daily_forecast

DAILY = {"daily": [{"date": "2024-06-01", "min": 9.5, "max": 17.0, "summary": "showers"}]}


def test_daily_forecast(api):
    api.add("/forecast?days=1&lat=53.8&lon=-1.549", DAILY)
    assert daily_forecast(53.79972, -1.54917, days=1) == [Day("2024-06-01", 9.5, 17.0, "showers")]
    assert api.requests == [("/forecast?days=1&lat=53.8&lon=-1.549", 10.0)]


def test_daily_forecast_default_length_is_the_apis(api):
    api.add("/forecast?lat=51.5&lon=-0.1", DAILY)
    assert len(daily_forecast(51.5, -0.1)) == 1


def test_forecast_failure(api):
    api.add("/forecast?lat=51.5&lon=-0.1", {"error": "overloaded"}, status=503)
    with pytest.raises(ApiError, match="error 503 on forecast"):
        daily_forecast(51.5, -0.1)


def test_current_temperature_fails_fast(api):
    api.add("/current?lat=51.5&lon=-0.1", {"temperature": 21.5})
    assert current_temperature(51.5, -0.1) == 21.5
    assert api.requests == [("/current?lat=51.5&lon=-0.1", 3)]


def test_current_temperature_failure(api):
    with pytest.raises(ApiError) as info:
        current_temperature(1, 2)
    assert (info.value.status, info.value.endpoint) == (404, "current")
