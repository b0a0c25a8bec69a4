import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import text

from filterd.bayes.model import ModelSpec
from filterd.bayes.statistics import Canonical
from filterd.evaluation.synth import SynthConfig, generate
from filterd.store.errors import ModelExists
from filterd.store.handle import Store
from filterd.store.labels import LabelledTokens


def nonempty(canonical: Canonical) -> Canonical:
    return {label: v for label, v in canonical.items() if v[0] or v[1]}


def test_a_model_moves_from_sqlite_to_postgresql_intact(
    tmp_path: Path, new_postgres_database: Callable[[], str]
) -> None:
    source_url, target_url = f"sqlite:///{tmp_path / 'a.db'}", new_postgres_database()
    source, target = Store.open(source_url), Store.open(target_url)
    for store in (source, target):
        store.upgrade()
    model = source.create_model("default", ModelSpec("mnb"), seed=3)
    other = target.create_model("other", ModelSpec("mnb"), seed=4)  # events of its own, first
    other.learn([LabelledTokens("x", "spam", ["a"])])
    records = generate(SynthConfig(n_messages=400, seed=1))
    model.learn(
        [LabelledTokens(r["id"], r["label"], r["text"].split(), analyst="ann") for r in records]
    )
    dump = io.StringIO()
    rows = model.export(dump)
    assert rows > 400
    dump.seek(0)
    assert target.import_model(dump, "restored") == "restored"
    restored = target.model("restored")
    trail = (
        "SELECT message_id, label, outcome, analyst FROM label_events e "
        "JOIN models m ON m.id = e.model_id WHERE m.name = :name ORDER BY message_id"
    )
    with source.engine.connect() as a, target.engine.connect() as b:
        before = a.execute(text(trail), {"name": "default"}).all()
        after = b.execute(text(trail), {"name": "restored"}).all()
    assert len(before) == 400 and after == before  # the audit trail came along
    assert nonempty(restored.load()[0].canonical()) == nonempty(model.load()[0].canonical())
    # the ledger came along: redelivering the same feedback changes nothing
    again = restored.learn(
        [LabelledTokens(r["id"], r["label"], r["text"].split()) for r in records]
    )
    assert again.learned == 0 and again.duplicates == 400


def test_import_refuses_what_is_not_an_export_and_existing_names(store: Store) -> None:
    with pytest.raises(ValueError, match="not a filterd model export"):
        store.import_model(io.StringIO('{"hello": 1}\n'))
    store.create_model("taken", ModelSpec("mnb"))
    header = {
        "format": "filterd-model/1",
        "name": "taken",
        "spec": {"variant": "mnb"},
        "hash_seed": 1,
        "seq": 0,
        "created_at": "2026-01-01T00:00:00+00:00",
    }
    with pytest.raises(ModelExists, match="exists already"):
        store.import_model(io.StringIO(json.dumps(header) + "\n"))
