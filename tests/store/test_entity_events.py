"""The entity events in the store (`filterd.store.entities`), on SQLite and PostgreSQL: a scorer
in step with the others reads each of their rows once, never its own, and still every row
committed within the overlap, whichever writer's."""

from datetime import UTC, datetime, timedelta

from filterd.bayes.model import ModelSpec
from filterd.entities.memory import EntityEvent
from filterd.store.decided import id_hash
from filterd.store.entities import DecidedEvent, ReadMarks
from filterd.store.handle import ModelStore, Store

T0 = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
ME, OTHER, THIRD = 11, 22, 33


def write(model: ModelStore, writer: int | None, at: datetime, *ids: str) -> None:
    events = [
        DecidedEvent(i, EntityEvent("customer", "c1", 1000.0 + n, 5.0, None))
        for n, i in enumerate(ids)
    ]
    with model.transaction() as writing:
        writing.record_entity_events(events, at, writer)


def read(model: ModelStore, since: datetime, marks: ReadMarks | None) -> list[int]:
    return sorted(h for h, _ in model.entity_events_written_since(since, marks))


def hashes(*ids: str) -> list[int]:
    return sorted(id_hash(i) for i in ids)


def test_a_scorer_reads_each_other_writers_row_once_and_none_of_its_own(store: Store) -> None:
    model = store.create_model("default", ModelSpec("mnb"))
    marks = ReadMarks(writer=ME)
    write(model, ME, T0, "mine1")
    write(model, OTHER, T0 + timedelta(seconds=1), "a1", "a2")
    write(model, None, T0 + timedelta(seconds=1), "old1")  # before revision 0018: no writer
    assert read(model, T0, marks) == hashes("a1", "a2", "old1")
    assert marks.newest == {OTHER: T0 + timedelta(seconds=1)}

    # within the overlap: only what came since, whoever wrote it (a third scorer's row dated
    # before the last read, by a clock behind, is read too)
    write(model, OTHER, T0 + timedelta(seconds=2), "a3")
    write(model, THIRD, T0 - timedelta(seconds=3), "b1")
    write(model, ME, T0 + timedelta(seconds=2), "mine2")
    since = T0 + timedelta(seconds=2)
    assert read(model, since, marks) == hashes("a3", "b1", "old1")  # the writerless row again
    assert read(model, since, marks) == hashes("old1")
    assert marks.newest == {OTHER: T0 + timedelta(seconds=2), THIRD: T0 - timedelta(seconds=3)}

    # a message decided again by another scorer is its row, written anew: read again
    write(model, THIRD, T0 + timedelta(seconds=4), "a1")
    assert read(model, since, marks) == hashes("a1", "old1")

    # without marks, everything within the overlap, every writer's
    assert read(model, since, None) == hashes("mine1", "mine2", "a1", "a2", "a3", "b1", "old1")
    # past the overlap a writer's mark is dropped: nothing of it could be read again
    later = T0 + timedelta(minutes=5)
    assert read(model, later, marks) == [] and marks.newest == {}
