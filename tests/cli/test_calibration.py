"""`filterd calibrate` through click's runner, on a SQLite file."""

import json
import re
import sqlite3
import sys
from datetime import UTC, datetime, timedelta
from inspect import signature
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

from filterd.bayes.model import ModelSpec
from filterd.cli.calibration import calibrate_command
from filterd.evaluation.synth import SynthConfig, generate
from filterd.jobs.calibrate import calibrate_classes
from filterd.service.config import DEFAULTS, parse_duration
from filterd.store.drift import Scored
from filterd.store.handle import ModelStore, Store
from filterd.store.labels import LabelledTokens
from tests.store.conftest import threshold_in_force


def held(db: str) -> ModelStore:
    """Model "default" of the store at URL `db`."""
    return Store.open(db).model("default")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store that learned 3,000 synthetic messages (20 % held out, fed just now), built once."""
    path = tmp_path_factory.mktemp("template") / "store.db"
    url = f"sqlite:///{path}"
    store = Store.open(url)
    store.upgrade()
    model = store.create_model("default", ModelSpec("mnb"), seed=0)
    records = generate(
        SynthConfig(
            n_messages=3000,
            class_priors={"ham": 0.6, "spam": 0.4},
            signal=0.2,
            mean_length=12,
            seed=1,
        )
    )
    for start in range(0, len(records), 1500):
        model.learn(
            [
                LabelledTokens(r["id"], r["label"], r["text"].split())
                for r in records[start : start + 1500]
            ],
            holdout_fraction=0.2,
        )
    store.close()
    return path


@pytest.fixture
def db(template: Path, tmp_path: Path) -> str:
    path = tmp_path / "store.db"
    with sqlite3.connect(template) as source, sqlite3.connect(path) as copy:
        source.backup(copy)  # WAL-safe copy
    return f"sqlite:///{path}"


HOLDOUT = ("--source", "holdout")  # the template store has holdout items, no prequential scores


def run(*args: str) -> Result:
    return CliRunner().invoke(calibrate_command, list(args))


def error_line(result: Result) -> str:
    """The last line of the output, once it is known to be a clean click error."""
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.output.strip().splitlines()
    if result.exit_code == 1:  # a refusal or a store problem: that one line and nothing else
        assert len(lines) == 1, result.output
    return lines[-1]


def test_a_report_then_one_beside_the_previous_version(db: str) -> None:
    first = run("--db", db, *HOLDOUT)
    assert first.exit_code == 0, first.output
    assert "recall ≥ 0.99 (exact)" in first.output and "wrote threshold version 1" in first.output
    assert "(14.0 days)" in first.output and "no previous" in first.output
    second = run("--db", db, *HOLDOUT, "--target-recall", "0.95", "--json")
    report = json.loads(second.stdout)
    assert (
        report["version"] == 2
        and report["previous"]["version"] == 1
        and report["target_recall"] == 0.95
    )
    assert report["recall"] >= 0.95 and report["ham_misclassification"] == pytest.approx(
        1 - report["specificity"]
    )
    assert report["auc"] == report["previous"]["auc"]
    text = run("--db", db, *HOLDOUT, "--dry-run").output
    assert (
        "previous (v2)" in text
        and "previous τ on this window" in text
        and "dry run: nothing written" in text
    )
    model = held(db)
    assert threshold_in_force(model).version == 2
    assert model.threshold_history()[0].created_by.startswith("filterd calibrate")


def test_a_guardrail_refusal_is_one_line_and_exit_1_and_force_is_recorded(db: str) -> None:
    refused = run("--db", db, *HOLDOUT, "--last", "100")
    assert refused.exit_code == 1
    assert error_line(refused).startswith("Error: refused for 'spam': too few positives")
    assert "needs at least 100" in refused.output and "--force" in refused.output
    assert held(db).latest_threshold("spam") is None
    forced = run("--db", db, *HOLDOUT, "--last", "100", "--force", "--json")
    assert forced.exit_code == 0 and json.loads(forced.stdout)["forced"] is True
    assert threshold_in_force(held(db)).forced
    conservative = run(
        "--db", db, *HOLDOUT, "--conservative", "--force"
    )  # ≈ 240 positives; 0.99 needs 299
    assert conservative.exit_code == 1 and "cannot override" in error_line(conservative)


def test_a_dry_run_writes_nothing(db: str) -> None:
    result = run("--db", db, *HOLDOUT, "--dry-run", "--window", "12h")
    assert (
        result.exit_code == 0
        and "dry run: nothing written" in result.output
        and "(12.0 hours)" in result.output
    )
    assert held(db).latest_threshold("spam") is None


@pytest.mark.parametrize(
    "args, message",
    [
        (["--window", "3x"], "'3x' is not a duration"),
        (["--window", "0d"], "longer than zero"),
        (["--window", "14d", "--last", "5"], "--window or --last, not both"),
        (["--target-recall", "1.5"], "--target-recall"),
        (["--step", "1.5"], "--step"),
        (["--source", "guess"], "--source"),
    ],
)
def test_bad_arguments_are_usage_errors(db: str, args: list[str], message: str) -> None:
    result = run("--db", db, *args)
    assert result.exit_code == 2 and message in error_line(result)


def test_store_problems_are_one_line_errors(db: str, tmp_path: Path) -> None:
    assert (
        error_line(run("--db", db, "--model", "nope"))
        == "Error: no model named 'nope' in the store (its models: 'default'); "
        "`filterd model create NAME` adds one"
    )
    not_ready = run("--db", db, "--min-docs", "100000")
    assert not_ready.exit_code == 1 and error_line(not_ready).startswith(
        "Error: model 'default' is not ready"
    )
    empty = run("--db", f"sqlite:///{tmp_path / 'empty.db'}")
    assert empty.exit_code == 1 and "filterd db upgrade" in error_line(empty)


def test_durations() -> None:
    assert parse_duration("14d") == timedelta(days=14) and parse_duration("1d12h") == timedelta(
        hours=36
    )
    assert parse_duration("30m") == timedelta(minutes=30) and parse_duration("1.5h") == timedelta(
        minutes=90
    )
    for bad in ("", "14", "d", "14 days", "-3d"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_every_class_one_vs_rest(db: str) -> None:
    result = run("--db", db, *HOLDOUT, "--all-classes", "--target-recall", "0.95", "--json")
    reports = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["target_class"], r["version"]) for r in reports] == [("ham", 1), ("spam", 2)]


def test_the_plot_is_a_png(db: str, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / "roc.png"
    run("--db", db, *HOLDOUT, "--target-recall", "0.95")
    result = run("--db", db, *HOLDOUT, "--plot", str(path))
    assert result.exit_code == 0, result.output
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000


def test_without_matplotlib_the_plot_says_what_to_install(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    result = run("--db", db, "--plot", str(tmp_path / "roc.png"))
    assert (
        result.exit_code == 1
        and error_line(result) == "Error: --plot needs matplotlib: pip install 'filterd[plot]'"
    )
    assert held(db).latest_threshold("spam") is None  # refused before writing


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("roc.txt", "not an image format matplotlib writes"),
        ("missing/roc.png", "cannot write to directory"),
    ],
)
def test_a_plot_path_it_cannot_draw_to_is_refused_before_writing(
    db: str, tmp_path: Path, name: str, message: str
) -> None:
    pytest.importorskip("matplotlib")
    result = run("--db", db, "--plot", str(tmp_path / name))
    assert result.exit_code == 1 and message in error_line(result)
    assert held(db).latest_threshold("spam") is None


# --- the adaptive source (the default): the prequential scores --------------------------------


def record(db: str, scored: list[tuple[str, float]], now: datetime, prefix: str) -> None:
    """Record (label, score) pairs as feedback scored at `now` before it was learned."""
    model = held(db)
    items = [
        Scored(f"{prefix}{i}", label, float(score), 1) for i, (label, score) in enumerate(scored)
    ]
    model.record_scores("spam", items, keep=5000, now=now)
    model.store.close()


def separable(rng: np.random.Generator, n_spam: int, n_ham: int) -> list[tuple[str, float]]:
    return [("spam", s) for s in rng.normal(3, 1, n_spam)] + [
        ("ham", s) for s in rng.normal(-3, 1, n_ham)
    ]


EXPECTED = re.compile(
    r"^expected on new traffic like the window: recall (\d+\.\d\d) % "
    r"\(90 % range (\d+\.\d+)–(\d+\.\d+) %\), specificity \d+\.\d\d % \([\d.]+–[\d.]+ %\)$",
    re.MULTILINE,
)


def test_adaptive_by_default_then_the_level_moves_by_the_misses(db: str) -> None:
    rng = np.random.default_rng(0)
    record(db, separable(rng, 300, 700), datetime.now(UTC) - timedelta(hours=1), "a")
    first = run("--db", db)
    assert first.exit_code == 0, first.output
    v1 = threshold_in_force(held(db))
    alpha = 1 - 0.99
    assert (v1.version, v1.source, v1.level) == (1, "adaptive", alpha)  # no misses seen yet: α
    assert "window (adaptive) " in first.output and ": 300 positives, 700 negatives" in first.output
    assert (
        "adaptive level: τ chosen for recall 99.00 % (miss level 0.01; target 0.99)" in first.output
    )
    expected = EXPECTED.search(first.output)
    assert expected is not None, first.output
    mean, low, high = map(float, expected.groups())
    # k/(P+1), k by the conservative bound: no miss has been seen yet (k = ⌈R·P⌉ = 297 else)
    assert low < mean < high and mean == pytest.approx(100 * 300 / 301, abs=0.005)
    assert "since it was written" not in first.output

    # after v1 was written: 100 spam, 3 of them below its τ, and 200 ham
    caught = v1.tau + rng.exponential(2.0, 97)
    missed = v1.tau - rng.uniform(0.1, 1.0, 3)
    ham = rng.normal(-3, 1, 200)
    passed = int((ham < v1.tau).sum())
    after = [("spam", s) for s in [*caught, *missed]] + [("ham", s) for s in ham]
    record(db, after, datetime.now(UTC), "b")  # later than v1's created_at: the CLI's clock
    dry = run("--db", db, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert (
        "previous τ (v1) since it was written: recall 97.00 % of 100 spam (3 missed), "
        f"specificity {100 * passed / 200:.2f} % of 200"
    ) in dry.output
    assert "(miss level 0.008; target 0.99)" in dry.output
    assert threshold_in_force(held(db)).version == 1

    second = run("--db", db, "--json")
    assert second.exit_code == 0, second.output
    report = json.loads(second.stdout)
    level = alpha + 0.1 * alpha * (100 * alpha - 3)  # α + γ (n α − m), γ = step · α
    assert report["level"] == level == pytest.approx(0.008)
    v2 = threshold_in_force(held(db))
    assert (v2.version, v2.source, v2.level) == (2, "adaptive", level)
    # τ for 1 − level (higher than R: v1 missed more than α) on the window, in exact mode
    assert report["recall"] >= 1 - level > 0.99 and not report["conservative"]
    assert report["source"] == "adaptive" and report["in_force"] == {
        "n_pos": 100,
        "caught": 97,
        "n_neg": 200,
        "passed": passed,
        "recall": 0.97,
        "specificity": passed / 200,
    }
    e = report["expected_recall"]
    assert e["low"] < e["mean"] < e["high"] and e["confidence"] == 0.9
    assert report["expected_specificity"]["low"] <= report["expected_specificity"]["high"]

    # step 0: the level stays where it was; prequential: no level
    still = json.loads(run("--db", db, "--dry-run", "--json", "--step", "0").stdout)
    assert still["level"] == level and still["in_force"]["n_pos"] == 0
    plain = run("--db", db, "--dry-run", "--source", "prequential")
    assert "window (prequential) " in plain.output and "adaptive level" not in plain.output
    assert "previous τ (v2) since it was written: no feedback scored since it was written" in (
        plain.output
    )


def test_without_prequential_scores_the_first_tau_is_from_the_holdout_then_refused(db: str) -> None:
    # a store bootstrapped by `filterd learn`: nothing scored on arrival. A first τ takes the
    # conservative bound, from the holdout too: R = 0.95 needs 59 positives, R = 0.99 299.
    first = run("--db", db, "--target-recall", "0.95")
    assert first.exit_code == 0, first.output
    assert "recall ≥ 0.95 (conservative, 95% lower bound)" in first.output
    assert "window (holdout) " in first.output and "wrote threshold version 1" in first.output
    assert "the first τ is from the holdout; the adaptive level starts from the next" in (
        first.output
    )
    assert "adaptive level:" not in first.output
    again = run("--db", db)  # with a τ in force, no fallback: too few scored on arrival
    assert again.exit_code == 1
    line = error_line(again)
    assert line.startswith("Error: refused for 'spam': too few positives: 0 'spam' items")
    assert "recorded by `filterd run`" in line
    assert threshold_in_force(held(db)).version == 1


def test_the_command_and_the_job_default_to_the_declared_settings() -> None:
    """One default per setting: `filterd calibrate`, the calibration job and `filterd run`
    (the configuration) calibrate alike unless told otherwise."""
    job = {name: p.default for name, p in signature(calibrate_classes).parameters.items()}
    command = {p.name: p.default for p in calibrate_command.params}
    c = DEFAULTS.calibration
    for key in ("source", "step", "max_auc_drop"):
        assert job[key] == command[key] == getattr(c, key), key
    assert job["min_docs"] == command["min_docs"] == DEFAULTS.model.min_docs
    assert command["target_recall"] == DEFAULTS.decision.target_recall
    assert command["target_classes"] == (DEFAULTS.decision.target_class,)
