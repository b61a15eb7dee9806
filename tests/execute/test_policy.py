"""The registered retry sequence."""

from __future__ import annotations

import pytest

from rungbench.errors import InputError
from rungbench.execute.policy import RetryPolicy


def test_backoff_sequence_repeats_its_last_value() -> None:
    """Waits before attempts 2, 3, 4, 5 follow the sequence, the last value repeating."""
    policy = RetryPolicy(max_attempts=5, backoff_s=(1.0, 3.0))
    assert [policy.wait_before(a) for a in (1, 2, 3, 4, 5)] == [0.0, 1.0, 3.0, 3.0, 3.0]


def test_retry_after_raises_the_wait_up_to_the_cap() -> None:
    """A server's Retry-After lengthens the wait, never beyond max_wait_s."""
    policy = RetryPolicy(backoff_s=(1.0,), max_wait_s=10.0)
    assert policy.wait_before(2, retry_after=4.0) == 4.0
    assert policy.wait_before(2, retry_after=0.5) == 1.0
    assert policy.wait_before(2, retry_after=99.0) == 10.0
    assert RetryPolicy(backoff_s=(1.0,), honor_retry_after=False).wait_before(2, 4.0) == 1.0


def test_policy_round_trips_through_json() -> None:
    """The manifest form rebuilds the identical policy."""
    policy = RetryPolicy(max_attempts=2, backoff_s=(0.5, 2.0), max_wait_s=9.0)
    assert RetryPolicy.from_json(policy.to_json()) == policy


def test_zero_attempts_is_refused() -> None:
    """A limit below one attempt is an input error naming the field."""
    with pytest.raises(InputError, match="max_attempts"):
        RetryPolicy(max_attempts=0)


def test_negative_max_wait_is_refused() -> None:
    """A negative cap on a single wait is an InputError, like a negative backoff."""
    with pytest.raises(InputError):
        RetryPolicy(max_wait_s=-1.0)
