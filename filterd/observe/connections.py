"""How many connections a server keeps, and which it closes to make room: shared by the HTTP
API's server (`filterd.web.server`) and the observe server (`filterd.observe.server`).

    table = Connections(
        connection_cap(setting), close, server="http", setting="http.max_connections"
    )
    if not table.admit(conn): close(conn)   # full of requests in progress: refused at once
    table.busy(conn)       # its request has arrived whole: no longer closed to make room
    table.waiting(conn)    # waiting again, for its next request on a kept-alive connection
    table.remove(conn)     # closed

A connection is *waiting* from its accept (or the end of its last answer) until its request has
arrived whole. At the limit, a new connection closes the oldest waiting one: idle and trickling
sockets are what an attacker holds cheaply, and a client that sends its request at once is the
newest, so it is served while a flood holds the rest. When every connection has a request in
progress the new one is refused. Either way the server logs one warning a minute at most.

The limit is the setting, but never more than a quarter of the process's open-file limit
(`connection_cap`), which is first raised to its hard limit: connections never exhaust the file
descriptors the rest of the process needs (the store, the brokers, the other server).
"""

from __future__ import annotations

import resource
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

import structlog

from filterd.observe.logs import Repeats

OPEN_FILES_SHARE = 4  # a server keeps at most 1/4 of the open-file limit in connections
MIN_CONNECTIONS = 8

Conn = TypeVar("Conn", bound=Hashable)

log = structlog.get_logger(__name__)


def raise_open_file_limit() -> int:
    """Raise the soft limit of open files to the hard one where allowed; the soft limit now
    (a sandbox that refuses setrlimit, as filterd's systemd units do, keeps its LimitNOFILE)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft


def connection_cap(setting: int) -> int:
    """The number of connections a server keeps: `setting`, at most a quarter of the open-file
    limit (raised first), and at least MIN_CONNECTIONS."""
    open_files = raise_open_file_limit()
    if open_files == resource.RLIM_INFINITY:
        return max(MIN_CONNECTIONS, setting)
    return max(MIN_CONNECTIONS, min(setting, open_files // OPEN_FILES_SHARE))


class Connections(Generic[Conn]):
    """The open connections of one server, the waiting ones in the order they began waiting
    (thread-safe; see the module docstring)."""

    def __init__(
        self, limit: int, close: Callable[[Conn], None], server: str, setting: str
    ) -> None:
        """`close(conn)` closes a connection evicted to make room (in the admitting thread);
        `server` and `setting` name the server and the key of its limit in the warning."""
        self.limit, self.close, self.server, self.setting = limit, close, server, setting
        self._lock = threading.Lock()
        self._waiting: OrderedDict[Conn, None] = OrderedDict()
        self._busy: set[Conn] = set()
        self._repeats = Repeats()

    def __len__(self) -> int:
        with self._lock:
            return len(self._waiting) + len(self._busy)

    def admit(self, conn: Conn) -> bool:
        """Count `conn` as waiting, closing the oldest waiting one at the limit; False when the
        limit is reached and none waits (the caller closes `conn`)."""
        evicted: Conn | None = None
        with self._lock:
            full = len(self._waiting) + len(self._busy) >= self.limit
            if full and self._waiting:
                evicted, _ = self._waiting.popitem(last=False)
            if not full or evicted is not None:
                self._waiting[conn] = None
        if evicted is not None:
            self._warn("closing the connections that waited longest for their request")
            self.close(evicted)
        elif full:
            self._warn("refusing new connections: every one has a request in progress")
        return not full or evicted is not None

    def busy(self, conn: Conn) -> None:
        """`conn`'s request has arrived whole: it is not closed to make room."""
        with self._lock:
            if conn in self._waiting:
                del self._waiting[conn]
                self._busy.add(conn)

    def waiting(self, conn: Conn) -> None:
        """`conn` waits for its next request, the newest of the waiting."""
        with self._lock:
            if conn in self._busy:
                self._busy.discard(conn)
                self._waiting[conn] = None

    def remove(self, conn: Conn) -> None:
        with self._lock:
            self._waiting.pop(conn, None)
            self._busy.discard(conn)

    def flush(self) -> None:
        """Log how many warnings the last minute held back (at a stop)."""
        self._repeats.flush(everything=True)

    def _warn(self, event: str) -> None:
        self._repeats.warning(
            log,
            f"{self.server} connections at the limit: {event}",
            {"server": self.server},
            limit=self.limit,
            setting=self.setting,
        )
