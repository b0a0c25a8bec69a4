"""Section 4: the learner's throughput into PostgreSQL, on feedback with text (4) and on
feedback by id for messages a scorer decided before, read back from the messages topic (4b)."""

from __future__ import annotations

from endtoend.context import Context
from endtoend.cpu import CpuSnapshot, cpu_use
from endtoend.daemon import Daemon, Topics
from endtoend.data import (
    Sms,
    feedback_values,
    label_values,
    mean_bytes,
    message_values,
    produce,
    sms_body,
)
from endtoend.metrics import counted_rate, decided, feedback_done, histogram_delta
from endtoend.results import Learning
from filterd.bayes.model import ModelSpec
from filterd.kafka.admin import create_topics
from harness import embedded_postgresql


def phase_learner(
    context: Context, records: list[Sms], spec: ModelSpec
) -> tuple[float, Learning, Learning]:
    """Feedback with text of `records`, then (4b) feedback by id for messages a scorer process
    decided beforehand, which the learner reads back from the messages topic; each into a model
    of `spec` in one embedded PostgreSQL. Returns (the mean feedback record's bytes, 4, 4b)."""
    options, tmp, bootstrap = context.options, context.tmp, context.bootstrap
    n = options.feedback
    topics = Topics.fresh("learn")
    create_topics({"bootstrap_servers": bootstrap}, topics.names(), options.partitions)
    values = feedback_values(records, n, "f")
    produce(bootstrap, topics.feedback, values)
    with embedded_postgresql(tmp / "pg") as url:

        def daemon(name: str, role: str, on: Topics) -> Daemon:
            return Daemon(
                tmp, name, role, bootstrap, on, url, "sms-pg", spec=spec, kafka=dict(options.kafka)
            )

        with_text = measure_learner(context, daemon("learner", "learner", topics))

        by_id = Topics.fresh("byid")
        create_topics({"bootstrap_servers": bootstrap}, by_id.names(), options.partitions)
        bodies = [sms_body(r.text) for r in records]
        produce(bootstrap, by_id.messages, message_values(bodies, n, "b"))
        scorer = context.started(daemon("byid-scorer", "scorer", by_id))
        scorer.wait(lambda m: decided(m) >= n, 600, f"{n:,} decisions")
        scorer.stop()
        produce(bootstrap, by_id.feedback, label_values(records, n, "b"))
        without_text = measure_learner(context, daemon("byid-learner", "learner", by_id))
    return mean_bytes(values), with_text, without_text


def measure_learner(context: Context, learner: Daemon) -> Learning:
    """Start `learner` and measure it until it has applied `options.feedback` feedback records;
    then stop it."""
    n, tmp = context.options.feedback, context.tmp
    context.started(learner)
    t_first, m_first = learner.wait(lambda m: feedback_done(m) > 0, 120, "a first feedback batch")
    cpu_start = CpuSnapshot.take(tmp)
    t_end, m_end = learner.wait(lambda m: feedback_done(m) >= n, 600, f"{n:,} feedback records")
    cpu = cpu_use(cpu_start, CpuSnapshot.take(tmp), learner.pid)
    outcomes = {
        dict(ls)["outcome"]: v
        for (name, ls), v in m_end.items()
        if name == "filterd_feedback_total" and v
    }
    return Learning(
        rate=counted_rate(learner.scrapes, feedback_done, t_first),
        window_rate=(n - feedback_done(m_first)) / (t_end - t_first),
        first_batch=feedback_done(m_first),
        startup_s=t_first - learner.started_at,
        outcomes=outcomes,
        hist=histogram_delta({}, m_end, "learner"),
        cpu=cpu,
        exit=learner.stop(),
    )
