from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from filterd.store.database import connect, current, downgrade, head, upgrade
from filterd.store.schema import Base

TABLES = {
    "models",
    "class_stats",
    "token_stats",
    "feedback_ledger",
    "holdout",
    "thresholds",
    "prequential",
    "label_events",
    "decided_messages",
    "parked_feedback",
    "review_items",
}


def tables(url):
    return set(inspect(connect(url)).get_table_names()) - {"alembic_version"}


def test_upgrade_from_empty_then_down_to_base_and_up_again(empty_url):
    assert current(empty_url) is None
    upgrade(empty_url)
    assert current(empty_url) == head() and tables(empty_url) == TABLES
    downgrade(empty_url, "base")
    assert current(empty_url) is None and tables(empty_url) == set()
    upgrade(empty_url)
    assert tables(empty_url) == TABLES


def test_models_match_the_migrations(empty_url):
    upgrade(empty_url)
    with connect(empty_url).connect() as conn:
        differences = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert differences == []
