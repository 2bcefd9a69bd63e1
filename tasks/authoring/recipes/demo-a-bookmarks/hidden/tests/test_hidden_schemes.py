from bookmarks import BookmarkStore, search, to_markdown
from bookmarks.urls import normalize


def test_hosts_are_kept_whole_whatever_their_first_letters():
    assert normalize("https://shop.example.com/cart") == "shop.example.com/cart"
    assert normalize("http://tracker.example.org/issues/") == "tracker.example.org/issues"
    assert normalize("https://pypi.org:443/") == "pypi.org"


def test_such_a_page_is_stored_once_and_found_by_its_address():
    store = BookmarkStore()
    store.add("https://shop.example.com/cart")
    store.add("http://shop.example.com/cart/", tags=["buy"])
    assert [(b.key, b.tags) for b in store] == [("shop.example.com/cart", {"buy"})]
    assert [b.key for b in search(store, "shop")] == ["shop.example.com/cart"]
    assert "- [shop.example.com/cart](https://shop.example.com/cart)" in to_markdown(store)
