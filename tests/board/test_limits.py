"""The login limits without a server: the sliding window, and checks counted when they end, so
a client that disconnects at once neither frees a place early nor escapes the limits. Real
argon2 in the real pool."""

from __future__ import annotations

import asyncio
import pickle

import pytest

from loopkit_board.auth import Accounts, hash_secret
from loopkit_board.limits import AttemptLimiter, LimitReached, LoginLimits, SecretChecker


def test_the_window_slides_and_a_success_starts_afresh() -> None:
    now = [1000.0]
    limiter = AttemptLimiter(3, 60, clock=lambda: now[0])
    for step in (0, 10, 20):
        now[0] = 1000 + step
        assert limiter.wait("k") == 0
        limiter.failed("k")
    assert limiter.wait("k") == pytest.approx(40)  # the first failure leaves at 1060
    now[0] = 1060.5
    assert limiter.wait("k") == 0  # two left in the window
    limiter.failed("k")
    assert limiter.wait("k") == pytest.approx(9.5)
    limiter.forget("k")
    assert limiter.wait("k") == 0
    small = AttemptLimiter(1, 60, max_keys=2, clock=lambda: now[0])
    for key in ("a", "b", "c"):
        small.failed(key)
    assert small.wait("a") == 0 and small.wait("c") > 0  # the oldest key was let go


def test_the_refusal_says_when_and_survives_pickling() -> None:
    error = LimitReached("too many wrong passwords for 'ann'", 41.2)
    assert error.retry_after == 42 and str(error).endswith("; try again in 42 s")
    again = pickle.loads(pickle.dumps(error))
    assert str(again) == str(error) and again.retry_after == 42


async def test_a_client_that_goes_away_is_still_counted() -> None:
    accounts = Accounts({"ann": hash_secret("right")}, {})
    checker = SecretChecker(accounts, LoginLimits(account_failures=3, client_in_flight=10))
    try:
        tasks = [
            asyncio.create_task(checker.password(f"client:{n}", "ann", "wrong")) for n in range(3)
        ]
        await asyncio.sleep(0)
        for task in tasks:
            task.cancel()  # the clients disconnect; the checks run on
        assert checker._waiting == 3  # their places stay taken until the checks end
        for _ in range(600):
            if checker._waiting == 0:
                break
            await asyncio.sleep(0.05)
        assert checker._waiting == 0 and checker._in_flight == {}
        with pytest.raises(LimitReached, match="too many wrong passwords for 'ann'"):
            await checker.password("client:other", "ann", "right")
    finally:
        checker.close()
