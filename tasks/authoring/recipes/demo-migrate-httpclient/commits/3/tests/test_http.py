import pytest

from weather import http


def test_get_builds_url_and_returns_response():
    seen = []
    client = http.Client("https://x.example/api/", lambda url, timeout: seen.append((url, timeout)) or (200, "[1]"))
    response = client.get("/items", params={"page": 2, "q": "a b"}, timeout=4)
    assert seen == [("https://x.example/api/items?page=2&q=a+b", 4)]
    assert (response.status, response.json()) == (200, [1])


def test_get_returns_error_statuses():
    response = http.Client("https://x.example", lambda url, timeout: (503, "busy")).get("/items")
    assert (response.status, response.text) == (503, "busy")
    with pytest.raises(http.HttpError, match="HTTP 503"):
        response.raise_for_status()


def test_get_wants_a_path():
    with pytest.raises(ValueError, match="must start with '/'"):
        http.Client().get(http.API_ROOT + "/stations")


def test_get_rejects_none_params():
    with pytest.raises(TypeError, match="'days' is None"):
        http.Client(transport=lambda url, timeout: (200, "")).get("/forecast", params={"days": None})


def test_positional_params_are_not_accepted():
    with pytest.raises(TypeError):
        http.Client(transport=lambda url, timeout: (200, "")).get("/forecast", {"lat": 1})


def test_shared_client_uses_configured_transport(api):
    api.add("/ping", {"ok": True})
    assert http.client().get("/ping").json() == {"ok": True}


def test_fetch_is_gone():
    with pytest.raises(RuntimeError, match="removed in 2.0"):
        http.fetch(http.API_ROOT + "/forecast")
