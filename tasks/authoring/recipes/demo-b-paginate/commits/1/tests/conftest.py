import pytest

RECORDS = [
    {"title": "Dune", "author": "Frank Herbert", "year": 1965, "tags": ["SF", "classic"]},
    {"title": "Kindred", "author": "Octavia E. Butler", "year": 1979, "tags": ["sf"]},
    {"title": "The Dispossessed", "author": "Ursula K. Le Guin", "year": 1974},
    {"title": "A Wizard of Earthsea", "author": "Ursula K. Le Guin", "year": 1968, "tags": ["fantasy"]},
    {"title": "Piranesi", "author": "Susanna Clarke", "year": 2020, "tags": ["fantasy", " "]},
    {"title": "Parable of the Sower", "author": "Octavia E. Butler", "year": 1993},
]


@pytest.fixture
def records():
    return [dict(r) for r in RECORDS]
