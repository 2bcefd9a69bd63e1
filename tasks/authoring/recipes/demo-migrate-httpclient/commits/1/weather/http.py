"""Minimal HTTP access to the Skycast API."""
import urllib.error
import urllib.parse
import urllib.request

API_ROOT = "https://api.skycast.example/v1"


def urllib_transport(url: str, timeout: float) -> tuple[int, str]:
    """GET `url` over the network; HTTP error statuses are returned, not raised."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


TRANSPORT = urllib_transport  # tests replace this


def fetch(url: str, params: dict | None = None, timeout: float = 10.0) -> tuple[int, str]:
    """GET `url` with query `params` (None values are left out); returns (status, body text)."""
    query = {k: v for k, v in (params or {}).items() if v is not None}
    if query:
        url += "?" + urllib.parse.urlencode(sorted(query.items()))
    return TRANSPORT(url, timeout)
