"""How steady this machine's per-core speed is: the same pure-Python loop, timed again and again.

    .venv/bin/python bench/host_speed.py [--rounds 20] [--pause 1.0]

Each round runs a fixed loop (3,000,000 multiply-modulo steps) and takes its CPU time, so that
waiting for a CPU does not count: only how fast the core ran. On a quiet machine the rounds agree
within a few per cent; on a shared host (another VM on the same cores, frequency scaling) they do
not, and every throughput figure measured there moves by as much.
"""

from __future__ import annotations

import argparse
import time


def work(steps: int = 3_000_000) -> int:
    total = 0
    for i in range(steps):
        total += i * i % 7
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--pause", type=float, default=1.0, help="seconds between rounds")
    args = parser.parse_args()
    times = []
    for _ in range(args.rounds):
        started = time.process_time()
        work()
        times.append(time.process_time() - started)
        time.sleep(args.pause)
    print("CPU ms per round: " + " ".join(f"{t * 1000:.0f}" for t in times))
    print(f"slowest / fastest: {max(times) / min(times):.2f}")


if __name__ == "__main__":
    main()
