"""The store's SQLite connections (`filterd.store.database.connect`)."""

from pathlib import Path

from filterd.store.database import WAL_CHECKPOINT_PAGES, connect

BLOB_PAGES = 100  # a 400,000-byte blob fills about 100 pages of 4,096 bytes


def test_the_wal_is_checkpointed_every_wal_checkpoint_pages_not_every_thousand(
    tmp_path: Path,
) -> None:
    engine = connect(f"sqlite:///{tmp_path / 'store.db'}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE blobs (b BLOB)")
    commits = 15  # past SQLite's default, a checkpoint that restarts the log every 1,000 pages
    for _ in range(commits):
        with engine.begin() as conn:
            conn.exec_driver_sql(f"INSERT INTO blobs VALUES (randomblob({BLOB_PAGES * 4000}))")
    with engine.connect() as conn:
        _, frames, _ = conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)").one()
        setting = conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar()
    assert frames > commits * BLOB_PAGES  # every page written since the first commit
    assert setting == WAL_CHECKPOINT_PAGES
