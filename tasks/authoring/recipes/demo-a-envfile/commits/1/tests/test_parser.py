import pytest

from envfile import parse, parse_line


def test_key_value():
    assert parse_line("DB_HOST=db.internal") == ("DB_HOST", "db.internal")


def test_spaces_around_key_and_value_and_export_prefix():
    assert parse_line("  export  DB_PORT = 5432 ") == ("DB_PORT", "5432")


def test_quotes_are_removed():
    assert parse('A=\'single\'\nB="double"\nC=""\n') == {"A": "single", "B": "double", "C": ""}


def test_blank_and_comment_lines_are_skipped():
    assert parse("\n# settings\n   # indented comment\nA=1\n") == {"A": "1"}


def test_a_later_line_wins():
    assert parse("A=1\nB=2\nA=3\n") == {"A": "3", "B": "2"}


@pytest.mark.parametrize(
    "line", ["JUST_A_KEY", "1ST=x", "MY-KEY=x", "=x"], ids=["no-equals", "digit", "dash", "no-key"]
)
def test_bad_lines_are_refused(line):
    with pytest.raises(ValueError):
        parse_line(line)


def test_errors_name_the_line():
    with pytest.raises(ValueError, match="line 3: "):
        parse("A=1\n\nnot a setting\n")
