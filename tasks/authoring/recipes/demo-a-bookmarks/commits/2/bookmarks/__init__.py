"""Bookmarks kept once per page."""

from bookmarks.search import search
from bookmarks.store import Bookmark, BookmarkStore
from bookmarks.urls import normalize

__all__ = ["Bookmark", "BookmarkStore", "normalize", "search"]
