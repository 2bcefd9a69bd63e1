from bookmarks import BookmarkStore


def test_the_same_page_is_stored_once_and_found_by_any_spelling():
    store = BookmarkStore()
    store.add("https://www.example.com/docs/", "Docs", tags=["Ref "])
    store.add("https://example.com/docs", "Other title", tags=["work", " "])
    assert len(store) == 1
    bookmark = store.get("example.com/docs#top")
    assert bookmark.title == "Docs"
    assert bookmark.tags == {"ref", "work"}


def test_an_untitled_entry_takes_the_title_of_a_later_duplicate():
    store = BookmarkStore()
    store.add("https://example.com/a")
    assert store.add("https://example.com/a/", "A page").title == "A page"


def test_remove_by_any_spelling():
    store = BookmarkStore()
    store.add("https://example.com/a")
    store.add("https://example.com/b")
    assert store.remove("http://www.example.com/a/")
    assert [b.key for b in store] == ["example.com/b"]


def test_iteration_is_sorted_by_title_then_address():
    store = BookmarkStore()
    store.add("https://example.com/b", "beta")
    store.add("https://example.com/a", "Alpha")
    store.add("https://example.com/z")
    assert [b.key for b in store] == ["example.com/z", "example.com/a", "example.com/b"]


def test_tag_counts():
    store = BookmarkStore()
    store.add("https://example.com/a", tags=["python", "ref"])
    store.add("https://example.com/b", tags=["python"])
    assert store.tag_counts() == {"python": 2, "ref": 1}
