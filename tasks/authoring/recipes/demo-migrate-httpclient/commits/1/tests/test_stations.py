import pytest

from weather.errors import ApiError
from weather.stations import Station, find_station, list_stations

LEEDS = {"code": "LDS", "name": "Leeds Bradford", "region": "north"}
YORK = {"code": "YRK", "name": "York", "region": "north"}
KEW = {"code": "KEW", "name": "Kew Gardens", "region": "south"}


def test_list_stations_follows_pages(api):
    api.add("/stations?page=1", {"items": [LEEDS, KEW], "next_page": 2})
    api.add("/stations?page=2", {"items": [YORK], "next_page": None})
    assert [s.code for s in list_stations()] == ["LDS", "KEW", "YRK"]
    assert [url for url, _ in api.requests] == ["/stations?page=1", "/stations?page=2"]


def test_list_stations_in_region(api):
    api.add("/stations?page=1&region=north", {"items": [LEEDS, YORK], "next_page": None})
    assert list_stations("north") == [Station.from_json(LEEDS), Station.from_json(YORK)]


def test_list_stations_failure(api):
    with pytest.raises(ApiError, match="error 404 on stations"):
        list_stations("nowhere")


def test_find_station(api):
    api.add("/stations/KEW", KEW)
    assert find_station("KEW") == Station("KEW", "Kew Gardens", "south")
    assert api.requests == [("/stations/KEW", 10.0)]


def test_find_unknown_station(api):
    assert find_station("XXX") is None


def test_find_station_server_error(api):
    api.add("/stations/KEW", {"error": "boom"}, status=500)
    with pytest.raises(ApiError, match="error 500 on stations"):
        find_station("KEW")
