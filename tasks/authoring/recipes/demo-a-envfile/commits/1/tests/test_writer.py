import pytest

from envfile import dump, parse


def test_dump():
    assert dump({"DB_HOST": "db.internal", "DB_PORT": "5432"}) == "DB_HOST=db.internal\nDB_PORT=5432\n"


def test_header_becomes_comments():
    assert dump({"A": "1"}, header="Generated\n\ndo not edit") == "# Generated\n#\n# do not edit\nA=1\n"


def test_nothing_to_dump():
    assert dump({}) == ""


def test_simple_values_read_back_the_same():
    values = {"URL": "https://example.com/a?b=c", "EMPTY": "", "PATH_LIST": "/usr/bin:/bin"}
    assert parse(dump(values)) == values


@pytest.mark.parametrize(("key", "value"), [("BAD KEY", "x"), ("A", "two\nlines")], ids=["key", "newline"])
def test_dump_refuses(key, value):
    with pytest.raises(ValueError):
        dump({key: value})
