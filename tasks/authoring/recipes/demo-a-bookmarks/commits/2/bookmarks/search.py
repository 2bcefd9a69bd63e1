"""Search: plain words match the title or the address; every ``tag:name`` term must be present."""

from __future__ import annotations

from collections.abc import Iterable

from bookmarks.store import Bookmark


def parse_query(query: str) -> tuple[list[str], set[str]]:
    """The plain words and the tags of a query, lower-cased."""
    words: list[str] = []
    tags: set[str] = set()
    for term in query.lower().split():
        if term.startswith("tag:"):
            tags.add(term[len("tag:") :])
        else:
            words.append(term)
    return words, tags


def search(bookmarks: Iterable[Bookmark], query: str) -> list[Bookmark]:
    """The bookmarks that match every term of ``query``, in the order given."""
    words, tags = parse_query(query)
    hits = []
    for bookmark in bookmarks:
        text = f"{bookmark.title} {bookmark.key}".lower()
        if tags <= bookmark.tags and all(word in text for word in words):
            hits.append(bookmark)
    return hits
