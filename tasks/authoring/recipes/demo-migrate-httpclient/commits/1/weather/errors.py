"""Errors raised by the weather package."""


class ApiError(Exception):
    """The Skycast API answered with an unexpected HTTP status."""

    def __init__(self, status: int, endpoint: str):
        super().__init__(f"Skycast API error {status} on {endpoint}")
        self.status = status
        self.endpoint = endpoint
