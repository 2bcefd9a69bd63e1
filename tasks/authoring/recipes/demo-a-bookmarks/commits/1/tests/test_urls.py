from bookmarks.urls import normalize, split_url


def test_host_is_case_insensitive_but_path_is_not():
    assert normalize("https://Example.COM/Docs") == "example.com/Docs"


def test_www_and_default_ports_are_dropped():
    assert normalize("https://www.example.com:443/a") == "example.com/a"
    assert normalize("example.com:80") == "example.com"
    assert normalize("example.com:8080/a") == "example.com:8080/a"


def test_trailing_slash_and_fragment_do_not_make_a_new_page():
    assert normalize("  https://docs.python.org/3/#intro ") == "docs.python.org/3"


def test_split_url():
    assert split_url("example.com/a/b") == ("example.com", "/a/b")
    assert split_url("example.com") == ("example.com", "")
