import subprocess
import sys
from collections.abc import Callable

from sqlalchemy import func, select

from filterd.bayes.model import ModelSpec
from filterd.bayes.statistics import Canonical
from filterd.store.handle import Store
from filterd.store.schema import Holdout

N = 1200
LEARNER = (
    """
import sys
from filterd.store.handle import Store
from filterd.store.labels import LabelledTokens
from filterd.evaluation.synth import SynthConfig, generate
url, start, stop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
records = generate(SynthConfig(n_messages=%d, seed=3))[start:stop]
model = Store.open(url).model("default")
for i in range(0, len(records), 100):
    part = records[i : i + 100]
    model.learn([LabelledTokens(r["id"], r["label"], r["text"].split()) for r in part])
"""
    % N
)


def learner(url: str, start: int, stop: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", LEARNER, url, str(start), str(stop)])


def nonempty(canonical: Canonical) -> Canonical:
    return {label: v for label, v in canonical.items() if v[0] or v[1]}


def test_two_learner_processes_with_overlapping_feedback_equal_sequential_learning(
    new_postgres_database: Callable[[], str],
) -> None:
    concurrent_url, sequential_url = new_postgres_database(), new_postgres_database()
    stores = [Store.open(url) for url in (concurrent_url, sequential_url)]
    for store in stores:
        store.upgrade()
        store.create_model("default", ModelSpec("mnb"), seed=11)
    # 0–800 and 400–1200 at once: the middle third arrives twice, from both processes
    processes = [learner(concurrent_url, 0, 800), learner(concurrent_url, 400, N)]
    assert [p.wait(timeout=120) for p in processes] == [0, 0]
    assert learner(sequential_url, 0, N).wait(timeout=120) == 0
    concurrent, _ = stores[0].model("default").load()
    sequential, _ = stores[1].model("default").load()
    assert nonempty(concurrent.canonical()) == nonempty(sequential.canonical())
    with stores[0].engine.connect() as conn:
        held_out = conn.execute(select(func.count()).select_from(Holdout)).scalar_one()
    assert concurrent.D.sum() + held_out == N  # every message exactly once
