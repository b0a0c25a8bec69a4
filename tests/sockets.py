"""Raw sockets against the servers' bounds (tests/web/test_connection_limits.py,
tests/observe/test_observe.py): connections that send a request slowly, or never.

sock = connected(port)                      # to 127.0.0.1, recv waits DRIP_SECONDS
seconds = seconds_until_closed(sock, drip)  # trickling `drip` until the server closes it
is_open(sock)                               # not closed by the server (yet)
"""

import socket
import time

DRIP_SECONDS = 0.2  # a byte this often: far more often than any deadline tested


def connected(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.settimeout(DRIP_SECONDS)
    return sock


def seconds_until_closed(sock: socket.socket, drip: bytes = b"", limit: float = 5.0) -> float:
    """Sends `drip` a byte every DRIP_SECONDS (nothing if empty) until the server closes `sock`
    (or `limit` s); the seconds it took. An answer meanwhile fails the test."""
    started = time.monotonic()
    for i in range(int(limit / DRIP_SECONDS)):
        try:
            if drip:
                sock.send(drip[i % len(drip) : i % len(drip) + 1])
            data = sock.recv(4096)
        except TimeoutError:
            continue
        except OSError:  # reset
            break
        assert data == b"", f"an answer to a request never finished: {data!r}"
        break
    return time.monotonic() - started


def is_open(sock: socket.socket) -> bool:
    """Whether the server has not closed `sock` (nothing else may be waiting on it)."""
    sock.settimeout(0.01)
    try:
        return sock.recv(1) != b""
    except TimeoutError:
        return True
    except OSError:
        return False
