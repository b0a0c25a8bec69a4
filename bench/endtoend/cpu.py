"""Who used the CPU in a measured window: the daemon, the broker, PostgreSQL, this process (the
load generator and observer), our other children, and everything else on the machine (/proc)."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

HZ = os.sysconf("SC_CLK_TCK")

# cores used on average in a window, by whom: daemon, bench, broker, postgres, other (our other
# processes) and others (everything else on the machine)
CpuUse = dict[str, float]


def _processes() -> dict[int, tuple[int, int]]:
    """pid → (ppid, CPU jiffies of all its threads) of every process."""
    out = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                data = Path(f"/proc/{entry.name}/stat").read_text()
            except OSError:
                continue
            rest = data[data.rindex(")") + 2 :].split()
            out[int(entry.name)] = (int(rest[1]), int(rest[11]) + int(rest[12]))
    return out


def _ours(table: dict[int, tuple[int, int]], marker: str) -> set[int]:
    """This process, processes whose command line names `marker`, and their descendants."""
    roots = {os.getpid()}
    for pid in table:
        with contextlib.suppress(OSError):
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                roots.add(pid)
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    ours: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid not in ours:
            ours.add(pid)
            todo += children.get(pid, [])
    return ours


def _kind(pid: int) -> str:
    """What one of our processes is: bench (this one), broker, postgres or other."""
    if pid == os.getpid():
        return "bench"
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "other"
    return "broker" if b"tansu" in command else "postgres" if b"postgres" in command else "other"


@dataclass
class CpuSnapshot:
    at: float
    busy: int  # jiffies of the whole machine not idle
    jiffies: dict[int, int]  # of our processes
    kinds: dict[int, str]

    @classmethod
    def take(cls, marker: Path) -> CpuSnapshot:
        """The machine's CPU time now, and that of our processes: this one, those whose command
        line names `marker` (the run's temporary directory: PostgreSQL's postmaster, which is not
        our child, has it in its command line) and their descendants."""
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
        busy = sum(fields) - fields[3] - fields[4]  # all but idle and iowait
        table = _processes()
        ours = [pid for pid in _ours(table, str(marker)) if pid in table]
        return cls(
            time.monotonic(),
            busy,
            {pid: table[pid][1] for pid in ours},
            {pid: _kind(pid) for pid in ours},
        )


def cpu_use(start: CpuSnapshot, end: CpuSnapshot, daemon: int | None) -> CpuUse:
    """Cores used on average between two snapshots: by the daemon (process id `daemon`), this
    process (load generator, observer), the broker, PostgreSQL, our other children, and
    everything else on the machine."""
    seconds = max(end.at - start.at, 1e-9) * HZ
    out = dict.fromkeys(("daemon", "bench", "broker", "postgres", "other"), 0.0)
    for pid, jiffies in end.jiffies.items():
        kind = "daemon" if pid == daemon else end.kinds[pid]
        out[kind] += (jiffies - start.jiffies.get(pid, 0)) / seconds
    out["others"] = max(0.0, (end.busy - start.busy) / seconds - sum(out.values()))
    return out


def cpu_line(cpu: CpuUse, rate: float | None = None, unit: str = "messages") -> str:
    """A markdown line of `cpu`, with `rate` per CPU-second of the daemon when it used some."""
    per = (
        f" ({rate / cpu['daemon']:,.0f} {unit} per CPU-second of the daemon)"
        if rate and cpu["daemon"] > 0.05
        else ""
    )
    parts = [
        f"the daemon {cpu['daemon']:.2f}{per}",
        f"the broker {cpu['broker']:.2f}",
        f"this process (load generator, observer) {cpu['bench']:.2f}",
    ]
    if cpu["postgres"] >= 0.005:
        parts.append(f"PostgreSQL {cpu['postgres']:.2f}")
    parts.append(f"**other work on the machine {cpu['others'] + cpu['other']:.2f}**")
    return f"CPU in the measured window, cores of {os.cpu_count()}: " + ", ".join(parts)


def cores(cpu: CpuUse) -> str:
    """The daemon's cores / other work's, as the targets table gives them."""
    return f"{cpu['daemon']:.2f} / {cpu['others'] + cpu['other']:.2f}"
