import pytest

from throttle import Rate, parse_rate


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        pytest.param("5/min", Rate(5, 60.0), id="per-minute"),
        pytest.param("100/hour", Rate(100, 3600.0), id="per-hour"),
        pytest.param("2/10s", Rate(2, 10.0), id="count-of-seconds"),
        pytest.param(" 3 / 1.5h ", Rate(3, 5400.0), id="spaces-and-fraction"),
        pytest.param("10/Days", Rate(10, 86400.0), id="plural-capitalised"),
        pytest.param("1/second", Rate(1, 1.0), id="long-unit"),
    ],
)
def test_parse_rate(text, rate):
    assert parse_rate(text) == rate


@pytest.mark.parametrize(
    "text",
    ["", "5", "five/min", "5/fortnight", "0/min", "5/0s", "-1/min"],
    ids=["empty", "no-period", "words", "unknown-unit", "zero-limit", "zero-period", "negative"],
)
def test_parse_rate_rejects(text):
    with pytest.raises(ValueError):
        parse_rate(text)
