from bookmarks import BookmarkStore, to_markdown


def test_markdown_lists_titles_links_and_tags():
    store = BookmarkStore()
    store.add("https://example.com/b", "Beta", tags=["x", "a"])
    store.add("https://example.com/a", "Alpha")
    assert to_markdown(store) == (
        "# Bookmarks\n\n- [Alpha](https://example.com/a)\n- [Beta](https://example.com/b) `a` `x`\n"
    )


def test_an_untitled_bookmark_is_listed_under_its_address():
    store = BookmarkStore()
    store.add("https://www.example.com/a/")
    assert "- [example.com/a](https://www.example.com/a/)" in to_markdown(store)


def test_grouped_by_tag_with_untagged_last():
    store = BookmarkStore()
    store.add("https://example.com/a", "A", tags=["work", "ref"])
    store.add("https://example.com/b", "B")
    text = to_markdown(store, heading="Mine", by_tag=True)
    assert text.splitlines()[0] == "# Mine"
    assert [line for line in text.splitlines() if line.startswith("## ")] == ["## ref", "## work", "## untagged"]
    assert text.count("[A]") == 2 and text.endswith("- [B](https://example.com/b)\n")
