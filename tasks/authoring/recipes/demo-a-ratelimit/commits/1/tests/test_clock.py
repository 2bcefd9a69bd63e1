import pytest

from throttle import ManualClock, MonotonicClock


def test_manual_clock_moves_when_told():
    clock = ManualClock(start=5)
    clock.advance(2.5)
    assert clock.now() == 7.5


def test_manual_clock_cannot_go_backwards():
    with pytest.raises(ValueError):
        ManualClock().advance(-1)


def test_monotonic_clock_does_not_decrease():
    clock = MonotonicClock()
    assert clock.now() <= clock.now()
