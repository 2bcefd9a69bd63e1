"""Plain-text rendering of catalog pages."""
from .models import Book
from .paging import Page


def render_book(book: Book) -> str:
    line = f"{book.title} - {book.author} ({book.year})"
    if book.tags:
        line += "  [" + ", ".join(book.tags) + "]"
    return line


def render_page(page: Page) -> str:
    """Numbered lines for the page's books followed by a footer with the position in the listing."""
    if page.total == 0:
        return "(no books)"
    width = len(str(page.total))
    lines = [f"{pos:>{width}}. {render_book(b)}" for pos, b in enumerate(page.items, start=page.first_position)]
    footer = f"-- page {page.number}/{page.page_count} ({page.total} books)"
    if page.has_next:
        footer += f", next: page {page.number + 1}"
    lines.append(footer + " --")
    return "\n".join(lines)
