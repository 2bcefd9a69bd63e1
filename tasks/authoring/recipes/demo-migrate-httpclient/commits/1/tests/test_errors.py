from weather.errors import ApiError


def test_api_error_message():
    error = ApiError(503, "forecast")
    assert str(error) == "Skycast API error 503 on forecast"
    assert (error.status, error.endpoint) == (503, "forecast")
