from bookmarks import BookmarkStore, search


def make_store():
    store = BookmarkStore()
    store.add("https://docs.python.org/3/", "Python docs", tags=["python", "ref"])
    store.add("https://example.com/recipes/pasta", "Pasta", tags=["food"])
    store.add("https://github.com/psf/requests", tags=["python"])
    return store


def test_words_match_the_title_or_the_address():
    store = make_store()
    assert [b.title for b in search(store, "PASTA")] == ["Pasta"]
    assert [b.key for b in search(store, "github requests")] == ["github.com/psf/requests"]


def test_every_tag_term_must_be_present():
    store = make_store()
    assert [b.title for b in search(store, "tag:python tag:ref")] == ["Python docs"]
    assert len(search(store, "tag:python")) == 2
    assert search(store, "tag:python pasta") == []


def test_an_empty_query_returns_everything_in_store_order():
    store = make_store()
    assert search(store, "  ") == list(store)
