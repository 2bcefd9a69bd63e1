"""URL normalisation: the key under which a bookmark is stored."""

from __future__ import annotations

DEFAULT_PORTS = (":80", ":443")


def split_url(url: str) -> tuple[str, str]:
    """Host and path of ``url`` (scheme already removed); the path keeps its leading slash."""
    host, slash, path = url.partition("/")
    return host, slash + path


def normalize(url: str) -> str:
    """The key two bookmarks share when they point at the same page.

    Host names are case-insensitive and ``www.`` is dropped; default ports, fragments
    and trailing slashes do not make a different page. The path keeps its case.
    """
    url = url.strip()
    if "://" in url:
        url = url.split("://", 1)[1]
    host, path = split_url(url)
    host = host.lower().removeprefix("www.")
    for port in DEFAULT_PORTS:
        host = host.removesuffix(port)
    path = path.split("#", 1)[0].rstrip("/")
    return host + path
