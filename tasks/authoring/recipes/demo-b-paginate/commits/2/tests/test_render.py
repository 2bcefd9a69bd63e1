from shelf.catalog import Catalog
from shelf.render import render_page


def test_render_first_page(records):
    text = render_page(Catalog.from_records(records).page(1, per_page=3, sort="year"))
    assert text.splitlines() == [
        "1. Dune - Frank Herbert (1965)  [classic, sf]",
        "2. A Wizard of Earthsea - Ursula K. Le Guin (1968)  [fantasy]",
        "3. The Dispossessed - Ursula K. Le Guin (1974)",
        "-- page 1/2 (6 books), next: page 2 --",
    ]


def test_render_last_page_numbers_continue(records):
    text = render_page(Catalog.from_records(records).page(2, per_page=3, sort="year"))
    assert text.splitlines()[0].startswith("4. Kindred")
    assert text.splitlines()[-1] == "-- page 2/2 (6 books) --"


def test_render_empty_catalog():
    assert render_page(Catalog().page(1)) == "(no books)"
