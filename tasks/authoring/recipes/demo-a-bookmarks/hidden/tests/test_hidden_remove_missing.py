from bookmarks import BookmarkStore


def test_removing_a_page_that_is_not_stored_says_so():
    store = BookmarkStore()
    store.add("https://example.com/a", "A")
    assert store.remove("https://example.com/gone") is False
    assert [b.title for b in store] == ["A"]


def test_removing_twice():
    store = BookmarkStore()
    store.add("https://example.com/a")
    assert store.remove("example.com/a") is True
    assert store.remove("https://example.com/a/") is False
    assert store.remove("never.example.org") is False
    assert len(store) == 0
