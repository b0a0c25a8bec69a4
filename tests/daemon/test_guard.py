"""The dead-letter rate guard."""

import pytest

from filterd.daemon.guard import DeadLetterFlood, DeadLetterGuard


def test_a_few_bad_records_pass() -> None:
    guard = DeadLetterGuard(max_ratio=0.5, window=10, max_consecutive=5)
    for _ in range(20):
        guard.check([False, False, True])


def test_a_run_of_dead_letters_trips_it() -> None:
    guard = DeadLetterGuard(max_ratio=1.0, window=10, max_consecutive=5)
    guard.check([True] * 4)
    with pytest.raises(DeadLetterFlood, match="5 records in a row"):
        guard.check([True])


def test_a_high_share_over_the_window_trips_it() -> None:
    guard = DeadLetterGuard(max_ratio=0.5, window=10, max_consecutive=0)
    guard.check([False, True] * 5)  # exactly half: allowed
    with pytest.raises(DeadLetterFlood, match="6 of the last 10"):
        guard.check([True])


def test_the_ratio_waits_for_a_full_window() -> None:
    guard = DeadLetterGuard(max_ratio=0.5, window=100, max_consecutive=0)
    guard.check([True] * 99)
    with pytest.raises(DeadLetterFlood):
        guard.check([True])
