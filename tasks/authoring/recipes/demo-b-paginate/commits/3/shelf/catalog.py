"""The catalog: an ordered collection of books."""
from .models import Book
from .paging import Page, paginate

SORT_KEYS = {
    "title": lambda b: b.title.lower(),
    "author": lambda b: (b.author.lower(), b.year),
    "year": lambda b: (b.year, b.title.lower()),
}


class Catalog:
    def __init__(self, books=()):
        self._books: list[Book] = list(books)

    @classmethod
    def from_records(cls, records) -> "Catalog":
        return cls(Book.from_dict(r) for r in records)

    def __len__(self) -> int:
        return len(self._books)

    def add(self, book: Book) -> None:
        if any(b.title == book.title and b.author == book.author for b in self._books):
            raise ValueError(f"already in the catalog: {book.title!r} by {book.author}")
        self._books.append(book)

    def by_author(self, author: str) -> list[Book]:
        wanted = author.strip().lower()
        return [b for b in self._books if b.author.lower() == wanted]

    def search(self, query: str) -> list[Book]:
        return [b for b in self._books if b.matches(query)]

    def sorted_by(self, key: str = "title") -> list[Book]:
        if key not in SORT_KEYS:
            raise ValueError(f"unknown sort key {key!r}; expected one of {sorted(SORT_KEYS)}")
        return sorted(self._books, key=SORT_KEYS[key])

    def page(self, number: int, per_page: int = 10, sort: str = "title") -> Page:
        """One page of the catalog in the given order."""
        return paginate(self.sorted_by(sort), number, per_page)
