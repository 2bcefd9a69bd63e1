from throttle import Decision, ManualClock, Rate, RateLimiter


def test_keys_have_their_own_windows():
    clock = ManualClock()
    limiter = RateLimiter("1/min", clock)
    assert limiter.check("alice").allowed
    assert limiter.check("bob").allowed
    assert not limiter.check("alice").allowed


def test_a_refusal_says_when_to_retry():
    clock = ManualClock()
    limiter = RateLimiter(Rate(2, 10), clock)
    assert limiter.check("k") == Decision(True, 1, 0.0)
    clock.advance(2)
    assert limiter.check("k") == Decision(True, 0, 0.0)
    clock.advance(1)
    assert limiter.check("k") == Decision(False, 0, 7.0)


def test_reset_forgets_a_key():
    clock = ManualClock()
    limiter = RateLimiter("1/min", clock)
    limiter.check("k")
    limiter.reset("k")
    limiter.reset("never-seen")
    assert limiter.check("k").allowed


def test_uses_the_real_clock_by_default():
    limiter = RateLimiter("100/s")
    assert all(limiter.check("k").allowed for _ in range(5))


def test_forget_idle_keeps_keys_with_recent_requests():
    clock = ManualClock()
    limiter = RateLimiter("3/min", clock)
    limiter.check("alice")
    clock.advance(30)
    limiter.check("bob")
    clock.advance(20)
    assert limiter.forget_idle() == 0
    assert len(limiter) == 2
    assert limiter.check("alice") == Decision(True, 1, 0.0)
