"""Analysts using a scorer's workbench while it is measured (--workbench): threads of this process
that log in and request the workbench's pages and POST /v1/check at a steady rate, and what
their requests took."""

from __future__ import annotations

import base64
import html
import http.client
import json
import re
import threading
import time
import urllib.parse
from dataclasses import dataclass
from http.cookies import SimpleCookie

from endtoend.daemon import Daemon
from endtoend.decisions import Quantiles, quantiles_ms
from endtoend.options import WORKBENCH_USER, Workbench

WORKBENCH_PAGES = ("/queue", "/queue?label=spam", "/messages/{id}", "/model", "/audit", "/v1/check")
MESSAGE_ID = re.compile(r'data-message-id="([^"]+)"')
CSRF_FIELD = re.compile(r'name="csrf" value="([^"]+)"')

# one request: (epoch s sent, page, status (0: no answer), seconds, the thread's CPU s after it)
Request = tuple[float, str, int, float, float]


@dataclass
class PageTimes:
    """The requests of one page (or of all): how many, by status, and their times (None: no
    request)."""

    count: int
    statuses: dict[int, int]
    times: Quantiles | None


@dataclass
class WorkbenchSummary:
    """The analysts' requests of one measured window."""

    pages: dict[str, PageTimes]  # by page of WORKBENCH_PAGES, and "all"
    rate: float  # requests/s achieved
    target_rate: float
    window_s: float
    cpu: float  # the analysts' threads, in cores
    analysts: int
    ids: int  # message ids on the last queue page read
    skipped: int  # /messages turns skipped while no queue page had an id yet
    login_error: str | None


class Analyst(threading.Thread):
    """One analyst using a daemon's workbench, in a thread of this process: log in once (GET
    /login for the `filterd_login` cookie and the form's csrf field, POST /login for the
    `filterd_session` cookie), then `rate` requests/s, in turn (from the `first`-th):
    GET /queue, /queue?label=spam, /messages/<an id from a queue page's rows>, /model, /audit,
    and POST /v1/check of one SMS message with basic auth. Every request is timed (sent → body
    read), on one keep-alive connection, and kept in `records`."""

    def __init__(
        self,
        port: int,
        password: str,
        rate: float,
        texts: list[str],
        first: int,
        offset: float,
        ids: list[str],
    ) -> None:
        super().__init__(name=f"analyst-{port}-{first}", daemon=True)
        self.port, self.first, self.offset = port, first, offset
        self.password, self.rate, self.texts = password, rate, texts
        self.halt, self.ready = threading.Event(), threading.Event()
        self.records: list[Request] = []
        self.ids: list[str] = ids  # message ids on the last queue page any analyst read
        self.skipped: list[float] = []  # /messages/{id} turns while no queue page had an id yet
        self.login_error: str | None = None
        self.connection: http.client.HTTPConnection | None = None
        self.basic = "Basic " + base64.b64encode(f"{WORKBENCH_USER}:{password}".encode()).decode()

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, http.client.HTTPMessage, bytes]:
        """(status, headers, body); one reconnect if the kept-alive connection was closed."""
        for attempt in (0, 1):
            if self.connection is None:
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            try:
                self.connection.request(method, path, body=body, headers=headers or {})
                response = self.connection.getresponse()
                return response.status, response.headers, response.read()
            except (OSError, http.client.HTTPException):
                self.connection.close()
                self.connection = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def login(self, timeout: float = 120) -> str:
        """The session cookie's `filterd_session=…`, once the daemon's HTTP server answers."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                status, headers, body = self.request("GET", "/login?next=/queue")
                break
            except OSError:
                if time.monotonic() > deadline or self.halt.is_set():
                    raise
                time.sleep(0.2)
        cookies = _cookies(headers)
        match = CSRF_FIELD.search(body.decode())
        if status != 200 or "filterd_login" not in cookies or not match:
            raise RuntimeError(f"GET /login: {status}, no login cookie or csrf field")
        form = urllib.parse.urlencode(
            {
                "name": WORKBENCH_USER,
                "password": self.password,
                "csrf": html.unescape(match.group(1)),
                "next": "/queue",
            }
        )
        status, headers, _ = self.request(
            "POST",
            "/login",
            form.encode(),
            {
                "Content-Type": "application/x-www-form-urlencoded",
                "Cookie": f"filterd_login={cookies['filterd_login'].value}",
            },
        )
        cookies = _cookies(headers)
        if status != 303 or "filterd_session" not in cookies:
            raise RuntimeError(f"POST /login: {status}, no session cookie")
        return f"filterd_session={cookies['filterd_session'].value}"

    def run(self) -> None:
        try:
            session = self.login()
        except (OSError, RuntimeError, http.client.HTTPException) as error:  # reported later
            self.login_error = f"{type(error).__name__}: {error}"
            self.ready.set()
            return
        self.ready.set()
        start, k = time.time() + self.offset, 0  # staggered after the login
        while not self.halt.is_set():
            due = start + k / self.rate
            if (wait := due - time.time()) > 0:
                if self.halt.wait(wait):
                    break
            elif wait < -1.0:  # more than a second behind (a stall): no burst to catch up
                start, k = time.time(), 0
            page = WORKBENCH_PAGES[(self.first + k) % len(WORKBENCH_PAGES)]
            k += 1
            path, body, headers = page, None, {"Cookie": session}
            if page == "/messages/{id}":
                if not self.ids:
                    self.skipped.append(time.time())
                    continue
                path = "/messages/" + urllib.parse.quote(self.ids[k % len(self.ids)], safe="")
            elif page == "/v1/check":
                text = self.texts[k % len(self.texts)]
                body = json.dumps({"id": f"wb-check-{k}", "text": text}).encode()
                headers = {"Authorization": self.basic, "Content-Type": "application/json"}
            sent = time.time()
            began = time.perf_counter()
            try:
                status, _, answer = self.request(
                    "GET" if body is None else "POST", path, body, headers
                )
            except (OSError, http.client.HTTPException):
                status, answer = 0, b""  # no answer: counted as not 200
            seconds = time.perf_counter() - began
            self.records.append((sent, page, status, seconds, time.thread_time()))
            if page.startswith("/queue") and status == 200:
                found = [
                    html.unescape(m) for m in MESSAGE_ID.findall(answer.decode(errors="replace"))
                ]
                if found:
                    self.ids[:] = found
        if self.connection is not None:
            self.connection.close()


def _cookies(headers: http.client.HTTPMessage) -> SimpleCookie:
    cookies = SimpleCookie()
    for header in headers.get_all("set-cookie") or []:
        cookies.load(header)
    return cookies


class WorkbenchLoad:
    """`analysts` Analyst threads on `daemon`'s workbench, `rate` requests/s in total, staggered
    evenly and each starting at another page, so that the mix and the pace are even."""

    def __init__(
        self, daemon: Daemon, password: str, rate: float, texts: list[str], analysts: int
    ) -> None:
        self.rate = rate
        ids: list[str] = []
        self.analysts = [
            Analyst(daemon.http_port, password, rate / analysts, texts, i, i / rate, ids)
            for i in range(analysts)
        ]

    def start(self) -> WorkbenchLoad:
        for analyst in self.analysts:
            analyst.start()
        return self

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for analyst in self.analysts:
            analyst.ready.wait(max(0.0, deadline - time.monotonic()))

    def is_alive(self) -> bool:
        return any(analyst.is_alive() for analyst in self.analysts)

    def stop(self) -> None:
        for analyst in self.analysts:
            analyst.halt.set()
        for analyst in self.analysts:
            analyst.join(60)

    def summary(self, t0: float, t1: float) -> WorkbenchSummary:
        """The requests sent between epoch seconds t0 and t1: by page, count, non-200 count (and
        which statuses), p50/p99/max ms; the achieved rate; the analysts' threads' CPU in cores."""
        seconds = max(t1 - t0, 1e-9)
        cpu = 0.0
        for analyst in self.analysts:
            mine = [r for r in analyst.records if t0 <= r[0] <= t1]
            cpu += (mine[-1][4] - mine[0][4]) / seconds if len(mine) > 1 else 0.0
        window = sorted(r for analyst in self.analysts for r in analyst.records if t0 <= r[0] <= t1)
        pages = {page: _page_times([r for r in window if r[1] == page]) for page in WORKBENCH_PAGES}
        pages["all"] = _page_times(window)
        errors = {a.login_error for a in self.analysts if a.login_error}
        return WorkbenchSummary(
            pages=pages,
            rate=len(window) / seconds,
            target_rate=self.rate,
            window_s=seconds,
            cpu=cpu,
            analysts=len(self.analysts),
            ids=len(self.analysts[0].ids),
            skipped=sum(t0 <= t <= t1 for a in self.analysts for t in a.skipped),
            login_error="; ".join(sorted(errors)) or None,
        )


def _page_times(requests: list[Request]) -> PageTimes:
    statuses: dict[int, int] = {}
    for r in requests:
        statuses[r[2]] = statuses.get(r[2], 0) + 1
    return PageTimes(
        len(requests), statuses, quantiles_ms([r[3] for r in requests]) if requests else None
    )


def start_workbench(
    workbench: Workbench | None, daemon: Daemon, texts: list[str]
) -> WorkbenchLoad | None:
    """The analysts on `daemon`'s workbench with --workbench, started; else None."""
    if workbench is None:
        return None
    return WorkbenchLoad(
        daemon, workbench.password, workbench.rate, texts, workbench.analysts
    ).start()
