import pytest


@pytest.fixture
def record():
    return {
        "code": "PX-1001",
        "due": "2024-03-08",
        "events": [
            {"date": "2024-03-06", "place": "Leeds hub", "status": "in_transit"},
            {"date": "2024-03-05", "place": "Depot 4", "status": "accepted"},
            {"date": "2024-03-09", "place": "Leeds", "status": "out_for_delivery"},
        ],
    }
