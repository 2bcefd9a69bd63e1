import pytest

from envfile import expand


def test_braced_and_bare_references():
    values = {"HOST": "db", "PORT": "5432", "URL": "postgres://${HOST}:$PORT/app"}
    assert expand(values)["URL"] == "postgres://db:5432/app"


def test_environment_is_the_fallback():
    assert expand({"HOME_DIR": "$HOME/app"}, environ={"HOME": "/home/me"}) == {"HOME_DIR": "/home/me/app"}


def test_file_variables_win_over_the_environment():
    assert expand({"USER": "svc", "WHO": "$USER"}, environ={"USER": "root"})["WHO"] == "svc"


def test_a_variable_only_sees_the_ones_above_it():
    assert expand({"A": "$B", "B": "x"}) == {"A": "", "B": "x"}


def test_double_dollar_is_a_dollar():
    assert expand({"PRICE": "$$5 for ${ITEM}"}, environ={"ITEM": "tea"}) == {"PRICE": "$5 for tea"}


def test_strict_refuses_unknown_names():
    with pytest.raises(KeyError, match="NOPE"):
        expand({"A": "${NOPE}"}, strict=True)
