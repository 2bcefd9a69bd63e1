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


def test_http_and_https_are_the_same_page():
    assert normalize("http://example.com/a") == normalize("https://example.com/a/") == "example.com/a"
    assert normalize("https://docs.python.org") == "docs.python.org"


def test_other_schemes_stay_in_the_key():
    assert normalize("ftp://Files.example.com/pub/") == "ftp://files.example.com/pub"
    assert normalize("ftp://files.example.com/pub") != normalize("https://files.example.com/pub")
