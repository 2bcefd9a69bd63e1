"""HTTP access to the Skycast API: a Client bound to a base URL and a transport."""
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

API_ROOT = "https://api.skycast.example/v1"


class HttpError(Exception):
    def __init__(self, status: int, url: str):
        super().__init__(f"HTTP {status} for {url}")
        self.status = status


@dataclass(frozen=True)
class Response:
    status: int
    text: str
    url: str

    def json(self):
        return json.loads(self.text)

    def raise_for_status(self) -> None:
        if not 200 <= self.status < 300:
            raise HttpError(self.status, self.url)


def urllib_transport(url: str, timeout: float) -> tuple[int, str]:
    """GET `url` over the network; HTTP error statuses are returned, not raised."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


class Client:
    def __init__(self, base_url: str = API_ROOT, transport=urllib_transport):
        self.base_url = base_url.rstrip("/")
        self.transport = transport

    def get(self, path: str, *, params: dict | None = None, timeout: float = 10.0) -> Response:
        """GET base_url + `path` with query `params`. HTTP error statuses are returned, not raised."""
        if not path.startswith("/"):
            raise ValueError(f"path must start with '/', got {path!r} (pass the path, not a full URL)")
        for key, value in (params or {}).items():
            if value is None:
                raise TypeError(f"query parameter {key!r} is None; leave it out instead")
        url = self.base_url + path
        if params:
            url += "?" + urllib.parse.urlencode(sorted(params.items()))
        status, text = self.transport(url, timeout)
        return Response(status, text, url)


_client: Client | None = None


def configure(transport=urllib_transport, base_url: str = API_ROOT) -> Client:
    """Replace the shared client (tests pass a fake transport)."""
    global _client
    _client = Client(base_url, transport)
    return _client


def client() -> Client:
    """The shared client."""
    return _client or configure()


def fetch(url, params=None, timeout=10.0):
    raise RuntimeError(
        "weather.http.fetch() was removed in 2.0; use weather.http.client().get(path, params=..., timeout=...)"
    )
