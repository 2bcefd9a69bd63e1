from throttle import Decision, ManualClock, RateLimiter, SlidingWindow


def test_a_hit_stops_counting_exactly_one_period_later():
    window = SlidingWindow(limit=2, period=10)
    assert window.hit(0) and window.hit(1)
    assert window.count(10) == 1
    assert window.retry_after(10) == 0.0
    assert window.hit(10)


def test_a_client_that_waits_retry_after_is_let_in():
    clock = ManualClock()
    limiter = RateLimiter("2/10s", clock)
    limiter.check("alice")
    clock.advance(1)
    limiter.check("alice")
    clock.advance(3)
    refused = limiter.check("alice")
    assert refused == Decision(False, 0, 6.0)
    clock.advance(refused.retry_after)
    assert limiter.check("alice") == Decision(True, 0, 0.0)


def test_forget_idle_drops_a_key_whose_last_request_is_one_period_old():
    clock = ManualClock()
    limiter = RateLimiter("1/min", clock)
    limiter.check("k")
    clock.advance(60)
    assert limiter.forget_idle() == 1
