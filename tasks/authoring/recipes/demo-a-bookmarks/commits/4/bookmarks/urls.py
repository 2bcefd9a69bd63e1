"""URL normalisation: the key under which a bookmark is stored."""

from __future__ import annotations

WEB_SCHEMES = ("https://", "http://")
DEFAULT_PORTS = (":80", ":443")


def split_url(url: str) -> tuple[str, str]:
    """Host and path of ``url`` (scheme already removed); the path keeps its leading slash."""
    host, slash, path = url.partition("/")
    return host, slash + path


def normalize(url: str) -> str:
    """The key two bookmarks share when they point at the same page.

    http and https are the same page; other schemes (``ftp://``, ``file://``) stay in the key.
    Host names are case-insensitive and ``www.`` is dropped; default ports, fragments
    and trailing slashes do not make a different page. The path keeps its case.
    """
    url = url.strip()
    for scheme in WEB_SCHEMES:
        url = url.removeprefix(scheme)
    scheme, sep, rest = url.rpartition("://")
    host, path = split_url(rest)
    host = host.lower().removeprefix("www.")
    for port in DEFAULT_PORTS:
        host = host.removesuffix(port)
    path = path.split("#", 1)[0].rstrip("/")
    return scheme.lower() + sep + host + path
