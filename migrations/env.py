"""Alembic environment: the URL comes from filterd (flag, $FILTERD_DATABASE_URL, default)."""

from alembic import context

from filterd.store.database import connect, database_url
from filterd.store.schema import Base

config = context.config
url = config.get_main_option("sqlalchemy.url") or database_url()


def run_offline() -> None:
    context.configure(
        url=url, target_metadata=Base.metadata, literal_binds=True, render_as_batch=True
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    with connect(url).connect() as connection:
        context.configure(
            connection=connection, target_metadata=Base.metadata, render_as_batch=True
        )
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
