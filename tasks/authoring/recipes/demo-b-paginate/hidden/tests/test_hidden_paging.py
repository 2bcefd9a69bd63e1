from shelf.catalog import Catalog
from shelf.paging import page_count, paginate
from shelf.render import render_page


def test_partial_last_page_is_reachable():
    items = list(range(1, 8))
    assert page_count(7, 3) == 3
    last = paginate(items, 3, 3)
    assert (last.items, last.page_count, last.has_next) == ([7], 3, False)


def test_has_next_before_partial_page():
    page = paginate(list(range(10)), 2, 4)
    assert page.has_next
    assert paginate(list(range(10)), 3, 4).items == [8, 9]


def test_render_footer_counts_partial_page(records):
    catalog = Catalog.from_records(records[:5])
    text = render_page(catalog.page(3, per_page=2, sort="year"))
    assert text.splitlines() == ["5. Piranesi - Susanna Clarke (2020)  [fantasy]", "-- page 3/3 (5 books) --"]
