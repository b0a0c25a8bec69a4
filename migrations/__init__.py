"""Alembic's environment and the versions of the store's schema, shipped in the package as
`filterd.migrations` (setup.py), where `filterd.store.database` finds them."""
