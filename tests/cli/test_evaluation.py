import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
from click import progressbar
from click._termui_impl import ProgressBar
from click.testing import CliRunner, Result

from filterd.cli import main
from filterd.cli.corpus_files import write_corpus
from filterd.evaluation.synth import SynthConfig, generate
from filterd.evaluation.synth_transactions import TransactionConfig, generate_transactions

T = TypeVar("T")

REQUIRED = {
    "variant",
    "select",
    "protocol",
    "n_train",
    "n_test",
    "auc",
    "one_minus_auc_pct",
    "average_precision",
    "spec_at_full_recall",
    "recall_at_fpr_1pct",
    "recall_at_fpr_0_1pct",
    "lam_pct",
    "accuracy",
    "macro_f1",
    "seconds",
    "messages_per_second",
}


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_evaluate_demo_as_json_gives_one_object_per_variant_and_selection() -> None:
    result = run(
        "evaluate",
        "--demo",
        "--variant",
        "mnb",
        "--variant",
        "twcnb",
        "--select",
        "none",
        "--select",
        "local:6:or",
        "--json",
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["variant"], r["select"]) for r in rows] == [
        ("mnb", "none"),
        ("mnb", "local:6:or"),
        ("twcnb", "none"),
        ("twcnb", "local:6:or"),
    ]
    assert all(set(r) >= REQUIRED for r in rows)


def test_evaluate_a_corpus_file_prints_a_table(tmp_path: Path) -> None:
    assert run("synth", str(tmp_path / "c.jsonl.gz"), "--messages", "400").exit_code == 0
    result = run(
        "evaluate", str(tmp_path / "c.jsonl.gz"), "--variant", "unb", "--param", "lam=1e-5"
    )
    assert result.exit_code == 0, result.output
    header, row = result.stdout.splitlines()
    assert header.split()[:3] == ["variant", "select", "protocol"]
    assert row.startswith("unb(lam=1e-05)")


def test_evaluate_a_corpus_folder_reads_its_messages_file(tmp_path: Path) -> None:
    assert run("synth", str(tmp_path / "messages.jsonl.gz"), "--messages", "400").exit_code == 0
    by_folder = json.loads(run("evaluate", str(tmp_path), "--json").stdout)
    by_file = json.loads(run("evaluate", str(tmp_path / "messages.jsonl.gz"), "--json").stdout)
    assert (by_folder["n_train"], by_folder["auc"]) == (by_file["n_train"], by_file["auc"])


def test_without_variant_the_configured_model_is_evaluated(tmp_path: Path) -> None:
    corpus = str(tmp_path / "c.jsonl.gz")
    assert run("synth", corpus, "--messages", "400").exit_code == 0

    def evaluated(*options: str) -> tuple[str, str]:
        (row,) = rows(run("evaluate", corpus, "--json", *options))
        return row["variant"], row["select"]

    # built in: the fusion, whose components are fixed
    assert evaluated() == ("fusion", "none")
    refused = run("evaluate", corpus, "--param", "s=0.45")
    assert refused.exit_code == 2 and "no evaluated variant has a parameter 's'" in refused.output
    # a configuration's [model], as the daemon reads it, and --param / --select over it
    config = tmp_path / "filterd.toml"
    config.write_text('[model]\nvariant = "robinson_fisher"\n')
    assert evaluated("--config", str(config)) == (
        "robinson_fisher(s=0.025,x=0.52)",
        "local:1000000:alo:0.18",
    )
    assert evaluated("--config", str(config), "--param", "s=0.45", "--select", "none") == (
        "robinson_fisher(s=0.45,x=0.52)",
        "none",
    )


def one_line_error(result: Result, code: int) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.output.strip().splitlines()[-1]


def test_bad_arguments_get_one_line_and_a_nonzero_exit(tmp_path: Path) -> None:
    assert "bad selection" in one_line_error(run("evaluate", "--demo", "--select", "local:x"), 2)
    assert "no parameter" in one_line_error(
        run("evaluate", "--demo", "--variant", "mnb", "--param", "mnb.beta=1"), 2
    )
    assert "not evaluated" in one_line_error(run("evaluate", "--demo", "--param", "mnb.alpha=1"), 2)
    assert "unknown variant" in one_line_error(run("evaluate", "--demo", "--variant", "svm"), 2)
    assert "not both" in one_line_error(run("evaluate"), 2)
    assert "no such file" in one_line_error(run("evaluate", str(tmp_path / "missing.jsonl")), 1)
    assert "a folder without" in one_line_error(run("evaluate", str(tmp_path)), 1)
    (tmp_path / "bad.jsonl").write_text('{"id": "1", "label": "ham", "text": "hi"}\nnot json\n')
    assert "bad.jsonl:2" in one_line_error(run("evaluate", str(tmp_path / "bad.jsonl")), 1)
    assert "--protocol" in one_line_error(run("evaluate", "--demo", "--protocol", "sideways"), 2)


def test_transactions_are_evaluated_with_labels_a_week_late_from_a_time_on(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "payments.jsonl"
    write_corpus(generate_transactions(TransactionConfig(customers=60, days=16)), corpus)
    common = ("evaluate", str(corpus), "--target", "fraud", "--protocol", "online", "--json")
    (at_once,) = rows(run(*common, "--variant", "robinson_fisher"))
    (late,) = rows(
        run(
            *common,
            "--variant",
            "robinson_fisher",
            "--label-delay",
            "7d",
            "--report-from",
            "2018-04-09",
        )
    )
    assert set(late) >= REQUIRED and late["label_delay"] == "604800s"
    assert late["report_from"] == "2018-04-09T00:00:00+00:00"
    assert late["n_train"] == at_once["n_train"] > late["n_test"]
    assert at_once["auc"] > 0.75  # the attributes reach the model
    (by_count,) = rows(run(*common, "--variant", "mnb", "--label-delay", "500"))
    assert by_count["label_delay"] == "500 messages"


def test_late_labels_and_a_report_start_get_one_line_errors(tmp_path: Path) -> None:
    corpus = str(tmp_path / "c.jsonl")
    assert run("synth", corpus, "--messages", "200").exit_code == 0
    assert "--protocol online" in one_line_error(run("evaluate", corpus, "--label-delay", "3"), 2)
    assert "a number of messages (e.g. 1000) or a time" in one_line_error(
        run("evaluate", corpus, "--protocol", "online", "--label-delay", "soon"), 2
    )
    assert "not an ISO 8601 time" in one_line_error(
        run("evaluate", corpus, "--protocol", "online", "--report-from", "May"), 2
    )
    # synthetic SMS carry no ts: a delay in time has nothing to count by
    assert "needs every message's ts" in one_line_error(
        run("evaluate", corpus, "--protocol", "online", "--variant", "mnb", "--label-delay", "1d"),
        1,
    )


def test_target_must_be_a_label(tmp_path: Path) -> None:
    assert "not a label" in one_line_error(run("evaluate", "--demo", "--target", "fraud"), 1)


def test_tune_grid_reports_every_candidate_and_measures_the_choice_on_the_test_part() -> None:
    result = run("tune", "--demo", "--variant", "wmnb", "--grid", "gamma=-1,-1e6", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["params"] == {"gamma": -1e6} and report["objective"] == "auc"
    assert report["test_after"]["auc"] > report["test_before"]["auc"] - 1e-9


def test_tune_unb_lambda_by_differential_evolution() -> None:
    result = run("tune", "--demo", "--variant", "unb", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["objective"] == "macro_f1" and len(report["params"]["lam"]) == 2


def test_tune_needs_something_to_search() -> None:
    assert "--grid" in one_line_error(run("tune", "--demo", "--variant", "mnb"), 2)
    assert "no parameter" in one_line_error(
        run("tune", "--demo", "--variant", "mnb", "--grid", "gamma=1,2"), 2
    )


def test_the_online_replay_moves_its_progress_bar_to_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from filterd.cli import evaluation

    bars = {}

    def recording(items: Sequence[T], label: str, enabled: bool = True) -> ProgressBar[T]:
        bars[label] = progressbar(items, label=label, file=io.StringIO())
        return bars[label]

    monkeypatch.setattr(evaluation, "_progress", recording)
    assert run("synth", str(tmp_path / "c.jsonl"), "--messages", "300").exit_code == 0
    # mnb is replayed vectorized, wcnb document by document (its weights need every token)
    result = run(
        "evaluate",
        str(tmp_path / "c.jsonl"),
        "--protocol",
        "online",
        "--variant",
        "mnb",
        "--variant",
        "wcnb",
    )
    assert result.exit_code == 0, result.output
    assert [(bars[s].pos, bars[s].length) for s in ("mnb online", "wcnb online")] == [
        (300, 300)
    ] * 2


def three_class_corpus(path: Path, labels: tuple[str, ...] = ("a", "b", "c")) -> str:
    """A small synthetic corpus of three classes."""
    priors = dict(zip(labels, (0.6, 0.25, 0.15)))
    write_corpus(generate(SynthConfig(n_messages=300, class_priors=priors, seed=3)), path)
    return str(path)


def rows(result: Result) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_relabel_merges_classes_before_evaluating(tmp_path: Path) -> None:
    corpus = three_class_corpus(tmp_path / "abc.jsonl.gz")
    (three,) = rows(run("evaluate", corpus, "--variant", "mnb", "--json"))
    assert (three["task"], sorted(three["per_class"])) == ("multiclass", ["a", "b", "c"])
    (renamed,) = rows(run("evaluate", corpus, "--variant", "mnb", "--relabel", "c=d", "--json"))
    assert (renamed["task"], sorted(renamed["per_class"])) == ("multiclass", ["a", "b", "d"])
    # c merged into b: two classes left, b against a
    (two,) = rows(run("evaluate", corpus, "--relabel", "c=b", "--target", "b", "--json"))
    assert (two["task"], two["target"], two["n_train"] + two["n_test"]) == ("binary", "b", 300)
    line = one_line_error(run("evaluate", corpus, "--relabel", "c=b", "--target", "c"), 1)
    assert line.endswith("target 'c' is not a label of this corpus (a, b)")
    # several OLD to one NEW: one class is left, which is no task
    line = one_line_error(run("evaluate", corpus, "--relabel", "b=a", "--relabel", "c=a"), 1)
    assert "at least two labels" in line


def test_relabel_gives_the_binary_view_of_a_smishing_corpus(tmp_path: Path) -> None:
    corpus = three_class_corpus(tmp_path / "sms.jsonl", labels=("ham", "spam", "smishing"))
    result = run("evaluate", corpus, "--relabel", "smishing=spam")
    assert result.exit_code == 0, result.output
    header, row = result.stdout.splitlines()
    assert header.split()[:3] == ["variant", "select", "protocol"]
    assert row.startswith("fusion ") and "split" in row
    (binary,) = rows(run("evaluate", corpus, "--relabel", "smishing=spam", "--json"))
    assert (binary["task"], binary["target"]) == ("binary", "spam")


def test_tune_reads_the_corpus_relabelled(tmp_path: Path) -> None:
    corpus = three_class_corpus(tmp_path / "abc.jsonl")
    result = run(
        "tune",
        corpus,
        "--variant",
        "mnb",
        "--grid",
        "alpha=0.1,1",
        "--relabel",
        "c=b",
        "--target",
        "b",
        "--json",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["test_after"]["task"] == "binary"


def test_bad_relabel_values_get_one_line_and_a_nonzero_exit(tmp_path: Path) -> None:
    corpus = three_class_corpus(tmp_path / "abc.jsonl")
    for value in ("c", "=b", "c=", "="):
        line = one_line_error(run("evaluate", corpus, "--relabel", value), 2)
        assert line == f"Error: --relabel {value!r} is not OLD=NEW (two non-empty labels)"
    line = one_line_error(run("evaluate", corpus, "--relabel", "c=b", "--relabel", "c=a"), 2)
    assert "--relabel 'c=a'" in line and "already mapped" in line
    line = one_line_error(run("evaluate", corpus, "--relabel", "d=b"), 2)
    assert "--relabel d=b" in line and "no record has the label 'd'" in line
    assert "--relabel" in one_line_error(
        run("tune", "--demo", "--variant", "mnb", "--grid", "alpha=1", "--relabel", "spam"), 2
    )


def test_the_fusion_is_evaluated_on_two_classes_and_has_nothing_to_tune(tmp_path: Path) -> None:
    assert run("synth", str(tmp_path / "c.jsonl.gz"), "--messages", "600").exit_code == 0
    for protocol in ("split", "online"):
        result = run(
            "evaluate",
            str(tmp_path / "c.jsonl.gz"),
            "--variant",
            "fusion",
            "--protocol",
            protocol,
            "--json",
        )
        assert result.exit_code == 0, result.output
        (row,) = [json.loads(line) for line in result.stdout.splitlines()]
        assert row["variant"] == "fusion" and row["auc"] > 0.9
    topics = generate(SynthConfig(n_messages=300, class_priors={"a": 0.4, "b": 0.3, "c": 0.3}))
    write_corpus(topics, tmp_path / "three.jsonl.gz")
    result = run("evaluate", str(tmp_path / "three.jsonl.gz"), "--variant", "fusion")
    assert result.exit_code == 1 and "fusion is a two-class model" in result.output
    result = run("tune", "--demo", "--variant", "fusion", "--grid", "s=0.1")
    assert result.exit_code != 0 and "fusion has nothing to tune" in result.output


def test_short_body_is_a_tokenizer_option_of_evaluate() -> None:
    assert run("evaluate", "--demo", "--short-body", "0", "--json").exit_code == 0
    result = run("evaluate", "--demo", "--short-body", "-1")
    assert result.exit_code == 2 and "--short-body" in result.output


def test_synthetic_corpora_of_other_options_have_other_ids(tmp_path: Path) -> None:
    """Two corpora learned into one store do not relabel each other's messages."""
    db = f"sqlite:///{tmp_path / 'store.db'}"
    assert run("db", "upgrade", "--db", db).exit_code == 0
    assert run("model", "create", "default", "--db", db).exit_code == 0
    ids = {}
    for options in (("--seed", "1"), ("--seed", "2"), ("--seed", "1", "--messages", "300")):
        path = tmp_path / f"{'-'.join(options)}.jsonl"
        written = run("synth", str(path), "--messages", "200", *options)
        assert written.exit_code == 0, written.output
        ids[options] = [json.loads(line)["id"] for line in path.read_text().splitlines()]
        learned = run("learn", str(path), "--db", db)
        assert learned.exit_code == 0 and "relabelled 0, duplicates 0" in learned.stdout
    first, second, longer = ids.values()
    assert not set(first) & set(second) and not set(first) & set(longer)
    again = tmp_path / "again.jsonl"
    assert run("synth", str(again), "--messages", "200", "--seed", "1").exit_code == 0
    assert [json.loads(line)["id"] for line in again.read_text().splitlines()] == first


def test_synth_to_a_path_it_cannot_write_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    for path, says in ((blocker / "c.jsonl", "Not a directory"), (tmp_path, "Is a directory")):
        result = run("synth", str(path), "--messages", "10")
        assert result.exit_code == 1
        assert result.stderr.splitlines() == [f"Error: {path}: {says}"]


def test_evaluate_remembers_the_entities_a_configuration_names(tmp_path: Path) -> None:
    corpus = tmp_path / "payments.jsonl"
    write_corpus(generate_transactions(TransactionConfig(customers=60, days=16)), corpus)
    config = tmp_path / "fraud.toml"
    config.write_text(
        '[decision]\ntarget_class = "fraud"\n'
        '[entities]\nkeys = ["customer", "terminal"]\nwindows = ["1h", "1d", "7d"]\n'
    )
    common = ("evaluate", str(corpus), "--protocol", "online", "--variant", "robinson_fisher")
    (remembered,) = rows(run(*common, "--json", "--config", str(config), "--label-delay", "2d"))
    (plain,) = rows(run(*common, "--json", "--target", "fraud", "--label-delay", "2d"))
    assert remembered["target"] == "fraud" and remembered["auc"] > plain["auc"]
    split = run("evaluate", str(corpus), "--config", str(config))
    assert "[entities] are remembered in the online protocol only" in one_line_error(split, 2)
    config.write_text('[entities]\nkeys = ["customer"]\nwindows = ["1d", "soon"]\n')
    assert "entities" in one_line_error(run(*common, "--config", str(config)), 1)
