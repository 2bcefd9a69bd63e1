"""Export bookmarks as a Markdown list."""

from __future__ import annotations

from collections.abc import Iterable

from bookmarks.store import Bookmark


def _item(bookmark: Bookmark) -> str:
    title = bookmark.title or bookmark.key
    tags = " ".join(f"`{tag}`" for tag in sorted(bookmark.tags))
    return f"- [{title}]({bookmark.url})" + (f" {tags}" if tags else "")


def to_markdown(bookmarks: Iterable[Bookmark], heading: str = "Bookmarks", by_tag: bool = False) -> str:
    """A Markdown document listing ``bookmarks``; with ``by_tag``, one section per tag (untagged last)."""
    lines = [f"# {heading}", ""]
    if not by_tag:
        lines += [_item(b) for b in bookmarks]
        return "\n".join(lines) + "\n"
    sections: dict[str, list[Bookmark]] = {}
    for bookmark in bookmarks:
        for tag in sorted(bookmark.tags) or [""]:
            sections.setdefault(tag, []).append(bookmark)
    for tag in sorted(sections, key=lambda t: (t == "", t)):
        lines += [f"## {tag or 'untagged'}", ""]
        lines += [_item(b) for b in sections[tag]] + [""]
    return "\n".join(lines).rstrip("\n") + "\n"
