import pytest

from throttle import SlidingWindow


def test_allows_up_to_the_limit():
    window = SlidingWindow(limit=3, period=10)
    assert [window.hit(t) for t in (0, 1, 2, 3)] == [True, True, True, False]
    assert window.count(3) == 3


def test_old_hits_expire():
    window = SlidingWindow(limit=2, period=10)
    assert window.hit(0) and window.hit(1)
    assert not window.hit(9.5)
    assert window.hit(10.5)
    assert window.count(10.5) == 2


def test_retry_after_counts_down_to_the_oldest_hit_leaving():
    window = SlidingWindow(limit=2, period=10)
    window.hit(0)
    window.hit(1)
    assert window.retry_after(4) == 6.0
    assert window.retry_after(7.5) == 2.5


def test_remaining():
    window = SlidingWindow(limit=2, period=5)
    assert window.remaining(0) == 2
    window.hit(0)
    assert window.remaining(1) == 1
    assert window.remaining(100) == 2


def test_hits_must_come_in_time_order():
    window = SlidingWindow(limit=5, period=5)
    window.hit(3)
    with pytest.raises(ValueError):
        window.hit(2)


def test_rejects_nonsense_limits():
    with pytest.raises(ValueError):
        SlidingWindow(limit=0, period=5)
