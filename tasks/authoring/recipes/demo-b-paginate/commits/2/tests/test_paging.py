import pytest

from shelf.paging import PageError, page_count, paginate

ITEMS = list("abcdef")


def test_even_split():
    assert page_count(6, 3) == 2
    assert paginate(ITEMS, 1, 3).items == ["a", "b", "c"]
    assert paginate(ITEMS, 2, 3).items == ["d", "e", "f"]


def test_navigation_flags():
    first, last = paginate(ITEMS, 1, 2), paginate(ITEMS, 3, 2)
    assert first.has_next and not first.has_previous
    assert last.has_previous and not last.has_next


def test_short_listing_fits_one_page():
    page = paginate(ITEMS, 1, 10)
    assert (page.items, page.page_count, page.has_next) == (ITEMS, 1, False)


def test_empty_listing_has_one_empty_page():
    page = paginate([], 1, 5)
    assert (page.items, page.page_count, page.first_position) == ([], 1, 0)


def test_first_position():
    assert paginate(ITEMS, 2, 3).first_position == 4


@pytest.mark.parametrize("number", [0, 3, -1])
def test_out_of_range(number):
    with pytest.raises(PageError, match="out of range"):
        paginate(ITEMS, number, 3)


def test_per_page_must_be_positive():
    with pytest.raises(ValueError, match="per_page"):
        paginate(ITEMS, 1, 0)
