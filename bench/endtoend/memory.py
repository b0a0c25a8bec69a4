"""Section 5: a scorer's memory with a big model, loaded and after deciding many messages."""

from __future__ import annotations

import time

from endtoend.context import Context
from endtoend.cpu import CpuSnapshot, cpu_use
from endtoend.daemon import Daemon, Topics
from endtoend.data import BIG_SPEC, message_values, produce
from endtoend.metrics import counted_rate, decided, total
from endtoend.results import Memory
from filterd.kafka.admin import create_topics


def phase_memory(context: Context, build_s: float) -> Memory:
    """A scorer of the model `big` (in tmp/big.db, built in `build_s` s): its memory once the
    model is loaded, and after it decided `options.memory_messages` messages."""
    options, tmp, bootstrap = context.options, context.tmp, context.bootstrap
    topics = Topics.fresh("memory")
    create_topics({"bootstrap_servers": bootstrap}, topics.names(), options.partitions)
    scorer = Daemon(
        tmp,
        "big",
        "scorer",
        bootstrap,
        topics,
        f"sqlite:///{tmp}/big.db",
        "big",
        BIG_SPEC,
        poll_records=options.poll_records,
        kafka=dict(options.kafka),
    )
    context.started(scorer)
    t_loaded, _ = scorer.wait(
        lambda m: total(m, "filterd_model_version") > 0, 300, "the model loaded"
    )
    time.sleep(1.0)  # the model is built right after the load; let the process settle
    loaded = scorer.memory()
    n = options.memory_messages
    produce(bootstrap, topics.messages, message_values(context.bodies, n, "b"))
    t_first, m_first = scorer.wait(lambda m: decided(m) > 0, 120, "a first decision")
    cpu_start = CpuSnapshot.take(tmp)
    t_end, _ = scorer.wait(lambda m: decided(m) >= n, 600, "every message decided")
    cpu = cpu_use(cpu_start, CpuSnapshot.take(tmp), scorer.pid)
    after = scorer.memory()
    return Memory(
        build_s=build_s,
        load_s=t_loaded - scorer.started_at,
        loaded=loaded,
        after=after,
        rate=counted_rate(scorer.scrapes, decided, t_first),
        window_rate=(n - decided(m_first)) / (t_end - t_first),
        cpu=cpu,
        exit=scorer.stop(),
    )
