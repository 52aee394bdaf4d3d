"""Deadlines for the integration tests: every wait is bounded, and scaled for slow machines.

OAUTH_RELAY_TEST_TIME_SCALE (default 1) multiplies every deadline (a slow CI host, valgrind).
No test sleeps to hide a race: it polls for the condition with `wait_until`.
"""

import os
import time

import pytest

TIME_SCALE = float(os.environ.get("OAUTH_RELAY_TEST_TIME_SCALE", "1"))


def scaled(seconds: float) -> float:
    return seconds * TIME_SCALE


def wait_until(predicate, timeout: float, message: str, interval: float = 0.02):
    """Polls `predicate` until it returns something truthy (returned) or `timeout` passes (fails)."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {scaled(timeout):.1f}s waiting for {message}")
        time.sleep(interval)

