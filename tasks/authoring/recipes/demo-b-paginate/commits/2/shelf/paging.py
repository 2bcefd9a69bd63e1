"""Splitting ordered results into numbered pages (1-based)."""
from dataclasses import dataclass
from typing import Sequence


class PageError(ValueError):
    """A page number outside 1..page_count was requested."""


@dataclass(frozen=True)
class Page:
    items: list
    number: int
    per_page: int
    page_count: int
    total: int

    @property
    def has_next(self) -> bool:
        return self.number < self.page_count

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def first_position(self) -> int:
        """1-based position of the first item on this page in the whole listing (0 if empty)."""
        return (self.number - 1) * self.per_page + 1 if self.items else 0


def page_count(total: int, per_page: int) -> int:
    """Number of pages needed for `total` items; an empty listing still has one (empty) page."""
    if per_page < 1:
        raise ValueError(f"per_page must be at least 1, got {per_page}")
    return max(1, total // per_page)


def paginate(items: Sequence, number: int, per_page: int) -> Page:
    """Return page `number` (1-based) of `items`, `per_page` items per page."""
    count = page_count(len(items), per_page)
    if not 1 <= number <= count:
        raise PageError(f"page {number} out of range 1..{count}")
    start = (number - 1) * per_page
    return Page(list(items[start:start + per_page]), number, per_page, count, len(items))
