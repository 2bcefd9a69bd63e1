import pytest

from shelf.models import Book


def test_from_dict_strips_and_normalises_tags():
    book = Book.from_dict({"title": " Dune ", "author": "Frank Herbert", "year": "1965", "tags": ["SF", "sf ", ""]})
    assert book == Book("Dune", "Frank Herbert", 1965, ("sf",))


def test_from_dict_names_missing_fields():
    with pytest.raises(ValueError, match="author, year"):
        Book.from_dict({"title": "Untitled"})


def test_matches_title_author_or_tag():
    book = Book("Kindred", "Octavia E. Butler", 1979, ("sf",))
    assert book.matches("kind")
    assert book.matches("BUTLER")
    assert book.matches("sf")
    assert not book.matches("fantasy")
