"""The bounded cache of recently scored messages."""

from filterd.daemon.recent import RecentMessages


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_tokens_come_back_by_id() -> None:
    recent = RecentMessages()
    recent.put(["a", "b"], [["win", "cash", "win"], []])
    assert recent.get("a") == ["win", "cash", "win"]
    assert recent.get("b") == []
    assert recent.get("c") is None


def test_the_oldest_go_first_when_over_count_or_bytes() -> None:
    recent = RecentMessages(max_messages=2)
    recent.put(["a", "b", "c"], [["x"], ["y"], ["z"]])
    assert recent.get("a") is None and recent.get("c") == ["z"]
    by_bytes = RecentMessages(max_bytes=10)
    by_bytes.put(["a", "b"], [["12345"], ["1234567"]])
    assert by_bytes.get("a") is None and by_bytes.get("b") == ["1234567"]


def test_entries_expire() -> None:
    clock = Clock()
    recent = RecentMessages(ttl_seconds=60, clock=clock)
    recent.put(["a"], [["x"]])
    clock.now = 30
    recent.put(["b"], [["y"]])
    clock.now = 61
    assert recent.get("a") is None and recent.get("b") == ["y"]


def test_a_message_scored_again_is_renewed() -> None:
    clock = Clock()
    recent = RecentMessages(ttl_seconds=60, clock=clock)
    recent.put(["a"], [["old"]])
    clock.now = 50
    recent.put(["a"], [["new"]])
    clock.now = 100
    assert recent.get("a") == ["new"] and len(recent) == 1
