import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from filterd.bayes.model import ModelSpec
from filterd.bayes.statistics import Canonical
from filterd.evaluation.synth import SynthConfig, generate
from filterd.store.backup import export_model, import_model
from filterd.store.database import connect, upgrade
from filterd.store.learning import LabelledTokens, apply_feedback, create_model
from filterd.store.sync import load


def nonempty(canonical: Canonical) -> Canonical:
    return {label: v for label, v in canonical.items() if v[0] or v[1]}


def test_a_model_moves_from_sqlite_to_postgresql_intact(
    tmp_path: Path, new_postgres_database: Callable[[], str]
) -> None:
    source_url, target_url = f"sqlite:///{tmp_path / 'a.db'}", new_postgres_database()
    for url in (source_url, target_url):
        upgrade(url)
    source = connect(source_url)
    create_model(source, "default", ModelSpec("mnb"), seed=3)
    target = connect(target_url)
    create_model(target, "other", ModelSpec("mnb"), seed=4)  # events of its own, numbered first
    apply_feedback(target, "other", [LabelledTokens("x", "spam", ["a"])])
    records = generate(SynthConfig(n_messages=400, seed=1))
    apply_feedback(
        source,
        "default",
        [LabelledTokens(r["id"], r["label"], r["text"].split(), analyst="ann") for r in records],
    )
    dump = io.StringIO()
    rows = export_model(source, "default", dump)
    assert rows > 400
    dump.seek(0)
    assert import_model(target, dump, "restored") == "restored"
    trail = (
        "SELECT message_id, label, outcome, analyst FROM label_events e "
        "JOIN models m ON m.id = e.model_id WHERE m.name = :name ORDER BY message_id"
    )
    with source.connect() as a, target.connect() as b:
        before = a.execute(text(trail), {"name": "default"}).all()
        after = b.execute(text(trail), {"name": "restored"}).all()
    assert len(before) == 400 and after == before  # the audit trail came along
    assert nonempty(load(target, "restored")[0].canonical()) == nonempty(
        load(source, "default")[0].canonical()
    )
    # the ledger came along: redelivering the same feedback changes nothing
    again = apply_feedback(
        target,
        "restored",
        [LabelledTokens(r["id"], r["label"], r["text"].split()) for r in records],
    )
    assert again.learned == 0 and again.duplicates == 400


def test_import_refuses_what_is_not_an_export_and_existing_names(engine: Engine) -> None:
    with pytest.raises(ValueError, match="not a filterd model export"):
        import_model(engine, io.StringIO('{"hello": 1}\n'))
    create_model(engine, "taken", ModelSpec("mnb"))
    header = {
        "format": "filterd-model/1",
        "name": "taken",
        "spec": {"variant": "mnb"},
        "hash_seed": 1,
        "seq": 0,
        "created_at": "2026-01-01T00:00:00+00:00",
    }
    with pytest.raises(ValueError, match="exists already"):
        import_model(engine, io.StringIO(json.dumps(header) + "\n"))
