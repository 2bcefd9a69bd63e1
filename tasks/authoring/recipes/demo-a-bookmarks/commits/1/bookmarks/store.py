"""The bookmark store: one entry per page, whatever the spelling of its address."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from bookmarks.urls import normalize


@dataclass
class Bookmark:
    url: str
    title: str = ""
    tags: set[str] = field(default_factory=set)

    @property
    def key(self) -> str:
        """The normalised address; two bookmarks with the same key are the same page."""
        return normalize(self.url)


class BookmarkStore:
    """Bookmarks by normalised address; adding a page twice merges the two entries."""

    def __init__(self) -> None:
        self._items: dict[str, Bookmark] = {}

    def add(self, url: str, title: str = "", tags: Iterable[str] = ()) -> Bookmark:
        """Store a bookmark, or merge its title and tags into the entry for the same page."""
        new = Bookmark(url.strip(), title.strip(), {t.strip().lower() for t in tags if t.strip()})
        old = self._items.get(new.key)
        if old is None:
            self._items[new.key] = new
            return new
        old.title = old.title or new.title
        old.tags |= new.tags
        return old

    def get(self, url: str) -> Bookmark | None:
        return self._items.get(normalize(url))

    def remove(self, url: str) -> bool:
        """Forget a page; False when it was not stored."""
        return self._items.pop(normalize(url)) is not None

    def tag_counts(self) -> Counter[str]:
        return Counter(tag for bookmark in self._items.values() for tag in bookmark.tags)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Bookmark]:
        """Bookmarks by title (case-insensitive), untitled ones first, then by address."""
        return iter(sorted(self._items.values(), key=lambda b: (b.title.lower(), b.key)))
