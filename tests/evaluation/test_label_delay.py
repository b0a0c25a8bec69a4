"""When labels reach the online replay (filterd.evaluation.label_delay)."""

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from filterd.evaluation.label_delay import LabelDelay


def at(*hours: float) -> list[datetime | None]:
    return [datetime(2018, 4, 1, tzinfo=UTC) + timedelta(hours=h) for h in hours]


def test_at_once_every_earlier_label_is_learned() -> None:
    assert LabelDelay().immediate and str(LabelDelay()) == "0 messages"
    assert LabelDelay().visible([None] * 4).tolist() == [0, 1, 2, 3]


def test_a_time_delay_counts_by_the_messages_ts() -> None:
    delay = LabelDelay(after=timedelta(hours=2))
    assert not delay.immediate and str(delay) == "7200s"
    # labels of messages sent at 0 h and 1 h arrive at 2 h and 3 h
    assert delay.visible(at(0, 1, 2, 2.5, 3, 10)).tolist() == [0, 0, 1, 1, 2, 5]


def test_a_message_out_of_time_order_does_not_turn_the_clock_back() -> None:
    # the fourth message says 0 h, sent after one of 5 h: its label arrives at 7 h, not 2 h
    delay = LabelDelay(after=timedelta(hours=2))
    assert delay.visible(at(0, 1, 5, 0, 6, 7)).tolist() == [0, 0, 2, 2, 2, 4]


def test_a_time_delay_needs_every_ts_and_a_delay_is_one_kind() -> None:
    with pytest.raises(ValueError, match="message 2 of the stream has none"):
        LabelDelay(after=timedelta(days=7)).visible([*at(0), None])
    with pytest.raises(ValueError, match="not both"):
        LabelDelay(messages=3, after=timedelta(days=1))
    with pytest.raises(ValueError, match="positive"):
        LabelDelay(after=timedelta(0))
    with pytest.raises(ValueError, match="0 or more"):
        LabelDelay(messages=-1)


@given(st.lists(st.floats(0, 1000), max_size=60), st.floats(0.01, 200), st.integers(0, 30))
def test_the_labels_learned_are_a_prefix_of_the_earlier_messages(
    hours: list[float], delay: float, messages: int
) -> None:
    for late in (LabelDelay(after=timedelta(hours=delay)), LabelDelay(messages=messages)):
        visible = late.visible(at(*hours))
        assert (np.diff(visible) >= 0).all() and (visible <= np.arange(len(hours))).all()
        assert (visible >= 0).all()
