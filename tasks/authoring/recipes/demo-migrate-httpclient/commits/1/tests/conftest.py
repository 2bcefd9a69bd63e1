import json

import pytest

from weather import http


class FakeApi:
    """Transport double: answers from a table of path+query -> (status, body) and records every request."""

    def __init__(self):
        self.answers = {}
        self.requests = []

    def add(self, path_and_query: str, body, status: int = 200):
        self.answers[http.API_ROOT + path_and_query] = (status, json.dumps(body))

    def __call__(self, url: str, timeout: float):
        self.requests.append((url.removeprefix(http.API_ROOT), timeout))
        return self.answers.get(url, (404, json.dumps({"error": "not found"})))


@pytest.fixture
def api(monkeypatch):
    fake = FakeApi()
    monkeypatch.setattr(http, "TRANSPORT", fake)
    return fake
