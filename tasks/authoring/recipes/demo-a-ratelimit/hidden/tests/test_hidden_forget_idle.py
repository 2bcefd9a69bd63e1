from throttle import Decision, ManualClock, RateLimiter


def test_forget_idle_drops_keys_without_recent_requests():
    clock = ManualClock()
    limiter = RateLimiter("3/min", clock)
    limiter.check("old")
    clock.advance(30)
    limiter.check("recent")
    clock.advance(45)
    assert limiter.forget_idle() == 1
    assert len(limiter) == 1
    assert limiter.check("recent") == Decision(True, 1, 0.0)


def test_forget_idle_drops_every_idle_key_and_can_run_again():
    clock = ManualClock()
    limiter = RateLimiter("1/s", clock)
    for client in ("a", "b", "c", "d"):
        limiter.check(client)
    clock.advance(5)
    limiter.check("e")
    assert limiter.forget_idle() == 4
    assert len(limiter) == 1
    assert limiter.forget_idle() == 0
    clock.advance(1)
    assert limiter.forget_idle() == 1
    assert len(limiter) == 0
