"""Book records."""
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Book:
    title: str
    author: str
    year: int
    tags: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def from_dict(cls, data: dict) -> "Book":
        """Build a Book from a plain mapping (as read from JSON)."""
        missing = [k for k in ("title", "author", "year") if k not in data]
        if missing:
            raise ValueError(f"book record is missing {', '.join(missing)}")
        tags = tuple(sorted({t.strip().lower() for t in data.get("tags", []) if t.strip()}))
        return cls(str(data["title"]).strip(), str(data["author"]).strip(), int(data["year"]), tags)

    def matches(self, query: str) -> bool:
        """True when the query appears in the title, the author or a tag."""
        q = query.strip().lower()
        return q in self.title.lower() or q in self.author.lower() or q in self.tags
