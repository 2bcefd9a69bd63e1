import pytest

from shelf.catalog import Catalog
from shelf.models import Book


@pytest.fixture
def catalog(records):
    return Catalog.from_records(records)


def test_from_records_keeps_every_book(catalog):
    assert len(catalog) == 6


def test_add_rejects_duplicates(catalog):
    with pytest.raises(ValueError, match="already in the catalog"):
        catalog.add(Book("Dune", "Frank Herbert", 1965))


def test_by_author(catalog):
    assert [b.title for b in catalog.by_author("Ursula K. Le Guin")] == ["The Dispossessed", "A Wizard of Earthsea"]


def test_search_uses_tags(catalog):
    assert {b.title for b in catalog.search("fantasy")} == {"A Wizard of Earthsea", "Piranesi"}


def test_sorted_by_year(catalog):
    assert [b.year for b in catalog.sorted_by("year")] == [1965, 1968, 1974, 1979, 1993, 2020]


def test_sorted_by_unknown_key(catalog):
    with pytest.raises(ValueError, match="unknown sort key"):
        catalog.sorted_by("isbn")


def test_by_author_ignores_case_and_spaces(catalog):
    assert len(catalog.by_author(" octavia e. butler")) == 2
