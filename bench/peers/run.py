"""How does filterd compare with bogofilter, SpamAssassin, CRM114, scikit-learn and River?

filterd side by side with the filters people run today, on the shared corpora.

    .venv/bin/python bench/peers/run.py --corpus ../shared/corpora/sms-spam [--corpus …]
        [--protocol split|online|both]
        [--peers bogofilter,spamassassin,crm114,sklearn,river,filterd]
        [--repeats 3] [--repeat-budget 90] [--limit N] [--relabel OLD=NEW] [--out bench/peers/out]
        [--results bench/peers/RESULTS.md]

Same messages in the same order for every peer: the corpus read by
`filterd.cli.corpus_files.read_corpus` (sorted by `order`, the first N with --limit, labels
merged by --relabel as `filterd evaluate --relabel` does, e.g. smishing=spam), the split of
`filterd.evaluation.corpus.train_test_split` (the corpus's own, else stratified 66/34 with seed
0: the one `filterd evaluate` uses), the online protocol the TREC immediate-feedback replay in
that order. Every peer's scores are measured by the same functions of
`filterd.evaluation.ranking`. Each peer runs in a fresh worker process per repetition (so that
its peak memory is its own); repetitions go round-robin over the peers, and speed is the median
over them. A peer whose first run took longer than --repeat-budget seconds is not repeated
(marked ¹). Per-message scores go to --out (outside git); the tables to --results.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the adapters, beside this script
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # bench's shared helpers
from adapters import Adapter, Msg, Probed, all_peers, ensure, wrap_as_mail
from candidates import Filterd
from harness import cpu_model, own_status_kb

if TYPE_CHECKING:
    from filterd.evaluation.corpus import Record

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

FAMILIES = ["bogofilter", "spamassassin", "crm114", "sklearn", "river", "filterd"]


class RunResult(TypedDict, total=False):
    """One run of one peer, as its worker prints it (and `error` for one that failed, `scores`
    the file of its per-message scores, kept from the first repetition)."""

    seconds: float
    messages: int
    peak_kb: int
    memory_kind: str
    check: str | None
    scores: str | None
    error: str


# --- the messages -----------------------------------------------------------------------------


def load(corpus: Path, limit: int | None, relabels: Sequence[str] = ()) -> list[Record]:
    from filterd.cli.corpus_files import read_corpus
    from filterd.cli.evaluation import relabel_mapping
    from filterd.evaluation.corpus import relabel

    path = corpus / "messages.jsonl.gz" if corpus.is_dir() else corpus
    records = read_corpus(path)
    if relabels:  # OLD=NEW before the (label-stratified) split, as `filterd evaluate --relabel`
        records = relabel(records, relabel_mapping(relabels))
    if limit:
        records = records[:limit]
    labels = {label for r in records for label in r.labels}
    if labels != {"ham", "spam"}:
        raise SystemExit(
            f"{path}: a spam/ham corpus is needed, this one has labels {sorted(labels)[:5]}"
        )
    return records


def corpus_name(corpus: Path) -> str:
    return (corpus if corpus.is_dir() else corpus.parent).name


def message_text(record: Record) -> str:
    """What a peer reads of a corpus line: its text, then a line for each other field filterd's
    tokenizer reads (subject, sender, and every attribute as "key=value", nested keys joined by
    "."), so that every peer gets the message filterd gets.

    >>> from filterd.evaluation.corpus import Record
    >>> message_text(Record("t", ("fraud",), "", "text", 1, None,
    ...     fields={"subject": "card", "attributes": {"amount": 57.16, "geo": {"cc": "FR"}}}))
    '\\nsubject card\\namount=57.16 geo.cc=FR'
    """
    lines = [record.text]
    for name in ("subject", "sender"):
        if name in record.fields:
            lines.append(f"{name} {record.fields[name]}")
    if "attributes" in record.fields:
        lines.append(" ".join(_attribute_words("", record.fields["attributes"])))
    return "\n".join(lines)


def _attribute_words(key: str, value: object) -> list[str]:
    if isinstance(value, dict):
        return [
            word
            for k, v in value.items()
            for word in _attribute_words(f"{key}.{k}" if key else str(k), v)
        ]
    if isinstance(value, list):
        return [word for v in value for word in _attribute_words(key, v)]
    return [f"{key}={value}"]


def message_files(records: Sequence[Record], folder: Path) -> dict[str, str]:
    """Each message as a file (text messages wrapped as mail), written once per invocation."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for i, r in enumerate(records):
        path = folder / f"{i:06d}.eml"
        text = message_text(r)
        text = text if r.format == "email" else wrap_as_mail(r.id, text)
        data = text.encode("utf-8", "surrogateescape")
        if not path.exists() or path.stat().st_size != len(data) or path.read_bytes() != data:
            path.write_bytes(data)
        paths[r.id] = str(path)
    return paths


# --- one run of one peer (a worker process) ---------------------------------------------------


def worker(args: argparse.Namespace) -> None:
    from filterd.evaluation.corpus import train_test_split

    peer = next(p for p in all_peers(args.candidate) if p.name == args.peer)
    records = load(Path(args.corpus), args.limit, args.relabel)
    paths = json.loads(Path(args.paths).read_text())
    msgs = {
        r.id: Msg(r.id, r.label == "spam", message_text(r), r.format, paths[r.id]) for r in records
    }
    train, test = train_test_split(records)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    run: Callable[[], np.ndarray]
    if isinstance(peer, Filterd):
        run = partial(
            peer.split_records if args.protocol == "split" else peer.online_records, records
        )
        scored = test if args.protocol == "split" else records
        n = len(records)
    elif args.protocol == "split":
        tr, te = [msgs[r.id] for r in train], [msgs[r.id] for r in test]
        run = partial(peer.split, tr, te, work)
        scored, n = test, len(train) + len(test)
    else:
        scored = records[: args.stream_limit] if args.stream_limit else records
        stream = [msgs[r.id] for r in scored]
        run = partial(peer.online, stream, work)
        n = len(scored)
    peer.warm()  # imports and first calls, outside the timed run
    with contextlib.suppress(OSError):  # reset the peak RSS so that it is this run's (Linux ≥ 4.0)
        Path("/proc/self/clear_refs").write_text("5")
    rss_before = own_status_kb("VmRSS")
    started = time.perf_counter()
    scores = np.asarray(run(), dtype=float)
    seconds = time.perf_counter() - started
    if isinstance(peer, Probed):  # measured outside the timed run (see adapters.timed_kb)
        peak_kb = peer.probe(work, [msgs[r.id] for r in scored[-3:]])
    else:
        peak_kb = own_status_kb("VmHWM") - rss_before
    result: RunResult = {
        "seconds": seconds,
        "messages": n,
        "peak_kb": peak_kb,
        "memory_kind": peer.memory_kind,
    }
    if len(scores) != len(scored):
        raise SystemExit(f"{peer.name}: {len(scores)} scores for {len(scored)} messages")
    if args.scores:
        with open(args.scores, "w") as f:
            f.write("id\tlabel\tscore\n")
            f.writelines(
                f"{r.id}\t{r.label}\t{s!r}\n" for r, s in zip(scored, scores.tolist(), strict=True)
            )
        if isinstance(peer, Filterd):
            result["check"] = peer.check(records, args.protocol, scores)
    print(json.dumps(result))


# --- the invocation ---------------------------------------------------------------------------


def measures(scores_file: Path, tau: float, first: int | None = None) -> dict[str, float]:
    from filterd.evaluation import ranking

    rows = [line.rstrip("\n").split("\t") for line in scores_file.read_text().splitlines()[1:]][
        :first
    ]
    truth = np.array([label == "spam" for _, label, _ in rows])
    scores = np.array([float(s) for _, _, s in rows])
    summary = ranking.binary_summary(scores, truth, tau=tau)
    return {
        "auc": summary["auc"],
        "one_minus_auc_pct": summary["one_minus_auc_pct"],
        "lam_pct": summary["lam_pct"],
        "h_pct": 100 * (1 - summary["recall_at_fpr_0_1pct"]),
        "spec": summary["spec_at_full_recall"],
        "n_pos": summary["n_pos"],
        "n_neg": summary["n_neg"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus",
        action="append",
        type=Path,
        help="a corpus folder (or its messages.jsonl.gz); repeatable",
    )
    parser.add_argument("--protocol", choices=["split", "online", "both"], default="both")
    parser.add_argument(
        "--peers", default=",".join(FAMILIES), help="comma-separated: " + ",".join(FAMILIES)
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        help="run only the peers whose name contains this, and filterd's rows (repeatable)",
    )
    parser.add_argument(
        "--candidate",
        action="append",
        default=[],
        metavar="VARIANT[,K=V…][+SELECT][+bigrams]",
        help="another filterd configuration to measure (repeatable)",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--repeat-budget",
        type=float,
        default=90.0,
        help="seconds: a peer whose first run took longer is not repeated",
    )
    parser.add_argument("--limit", type=int, help="the first N messages (in order) of each corpus")
    parser.add_argument(
        "--relabel",
        action="append",
        default=[],
        metavar="OLD=NEW",
        help="rename label OLD to NEW first (repeatable), e.g. smishing=spam for a binary view",
    )
    parser.add_argument(
        "--peer-limit",
        action="append",
        default=[],
        metavar="NAME=N",
        help="run the rows whose name contains NAME on the first N messages of the online "
        "stream only (their split run is skipped); filterd's reference is measured on the same "
        "prefix",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=HERE / "out",
        help="per-message scores, message files, peer databases",
    )
    parser.add_argument("--results", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument("--no-results", action="store_true", help="print the tables only")
    # worker mode (internal)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--peer", help=argparse.SUPPRESS)
    parser.add_argument("--paths", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    parser.add_argument("--scores", help=argparse.SUPPRESS)
    parser.add_argument("--stream-limit", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        args.corpus = args.corpus[0]
        return worker(args)
    if not args.corpus:
        parser.error("give at least one --corpus")

    families = [f.strip() for f in args.peers.split(",") if f.strip()]
    for family in families:
        if family not in FAMILIES:
            parser.error(f"unknown peer {family!r}: choose from {', '.join(FAMILIES)}")
    if "filterd" not in families:
        families.append("filterd")  # the ratios are against filterd
    versions: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for family in families:
        ok, text = ensure(family)
        (versions if ok else skipped)[family] = text
        print(f"{family}: {text}" if ok else f"{family}: SKIPPED, {text}", file=sys.stderr)
    peers = [
        p
        for p in all_peers(args.candidate)
        if p.family in versions
        and (not args.only or p.family == "filterd" or any(o in p.name for o in args.only))
    ]
    protocols = ["split", "online"] if args.protocol == "both" else [args.protocol]
    command = "python bench/peers/run.py " + shlex.join(sys.argv[1:])
    sections = {}
    for corpus in args.corpus:
        name = corpus_name(corpus)
        records = load(corpus, args.limit, args.relabel)
        out = args.out / name
        paths_file = out / "paths.json"
        out.mkdir(parents=True, exist_ok=True)
        paths_file.write_text(json.dumps(message_files(records, out / "mail")))
        tables = []
        for protocol in protocols:
            runs = run_round_robin(args, corpus, protocol, peers, out, paths_file)
            tables.append(table(name, protocol, records, peers, runs, out))
            print(tables[-1], flush=True)
        sections[name] = tables
    if not args.no_results:
        write_results(args.results, command, versions, skipped, sections, args)


def run_round_robin(
    args: argparse.Namespace,
    corpus: Path,
    protocol: str,
    peers: Sequence[Adapter],
    out: Path,
    paths_file: Path,
) -> dict[str, list[RunResult]]:
    runs: dict[str, list[RunResult]] = {}
    for rep in range(args.repeats):
        for peer in peers:
            if protocol not in peer.protocols:
                continue
            done = runs.setdefault(peer.name, [])
            prefix = peer_limit(args, peer)
            if prefix and protocol == "split":
                if not rep:
                    done.append({"error": f"not run: --peer-limit {prefix} (online prefix only)"})
                continue
            if rep and (not done or "error" in done[0] or done[0]["seconds"] > args.repeat_budget):
                continue
            scores = out / protocol / (slug(peer.name) + ".tsv") if rep == 0 else None
            if scores:
                scores.parent.mkdir(parents=True, exist_ok=True)
            command = [
                sys.executable,
                __file__,
                "--worker",
                "--peer",
                peer.name,
                "--corpus",
                str(corpus),
                "--protocol",
                protocol,
                "--paths",
                str(paths_file),
                "--work",
                str(out / "work" / slug(peer.name)),
            ]
            if args.limit:
                command += ["--limit", str(args.limit)]
            for item in args.relabel:
                command += ["--relabel", item]
            for c in args.candidate:
                command += ["--candidate", c]
            if scores:
                command += ["--scores", str(scores)]
            if prefix:
                command += ["--stream-limit", str(prefix)]
            started = time.perf_counter()
            done_ = subprocess.run(
                command, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1")
            )
            if done_.returncode != 0:
                error = (done_.stderr.strip().splitlines() or [f"exit status {done_.returncode}"])[
                    -1
                ]
                print(
                    f"[{corpus_name(corpus)} {protocol} {rep + 1}/{args.repeats}] "
                    f"{peer.name}: FAILED: {error}",
                    file=sys.stderr,
                )
                done.append({"error": error})
                continue
            result: RunResult = json.loads(done_.stdout.strip().splitlines()[-1])
            result["scores"] = str(scores) if scores else None
            done.append(result)
            print(
                f"[{corpus_name(corpus)} {protocol} {rep + 1}/{args.repeats}] "
                f"{peer.name}: {result['seconds']:.1f} s, "
                f"{result['messages'] / result['seconds']:,.0f} msg/s "
                f"(wall {time.perf_counter() - started:.0f} s)"
                + (f"  CHECK: {result['check']}" if result.get("check") else ""),
                file=sys.stderr,
                flush=True,
            )
    return runs


def peer_limit(args: argparse.Namespace, peer: Adapter) -> int | None:
    for item in args.peer_limit:
        name, _, n = item.rpartition("=")
        if name and name in peer.name:
            return int(n)
    return None


def slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")


def table(
    name: str,
    protocol: str,
    records: Sequence[Record],
    peers: Sequence[Adapter],
    runs: dict[str, list[RunResult]],
    out: Path,
) -> str:
    from filterd.evaluation.corpus import train_test_split

    train, test = train_test_split(records)
    head = (
        f"**{name}**, {protocol} protocol ("
        + (
            f"{len(train):,} train / {len(test):,} test"
            if protocol == "split"
            else f"{len(records):,} messages, in order"
        )
        + ")\n\n"
    )
    # each peer: its measures, (speed, runs, the runs) and None, or None, None and why not
    rows: list[
        tuple[
            Adapter, dict[str, float] | None, tuple[float, int, list[RunResult]] | None, str | None
        ]
    ] = []
    speeds: dict[str, float] = {}
    for peer in peers:
        done = [r for r in runs.get(peer.name, []) if "error" not in r]
        if protocol not in peer.protocols:
            continue
        if not done:
            errors = [r["error"] for r in runs.get(peer.name, [])]
            rows.append((peer, None, None, errors[0] if errors else "not run"))
            continue
        speed = statistics.median(r["messages"] / r["seconds"] for r in done)
        speeds[peer.name] = speed
        rows.append(
            (peer, measures(scores_file(done[0]), peer.tau), (speed, len(done), done), None)
        )
    reference = next(
        (
            p.name
            for p in peers
            if p.family == "filterd" and p.name in speeds and "default" in p.name
        ),
        next((n for n in speeds if n.startswith("filterd")), None),
    )
    lines = [
        head + "| peer | AUC | (1−AUC)% | lam% | h=.1% | spec@R=1 | msg/s "
        "| filterd default ÷ peer | peak MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for peer, m, timing, error in rows:
        if m is None or timing is None:
            lines.append(f"| {peer.name} | – | – | – | – | – | – | – | {error} |")
            continue
        speed, count, done = timing
        ratio = speeds[reference] / speed if reference else float("nan")
        rounds = (
            round_ratios(runs.get(reference, []), runs[peer.name])
            if reference and peer.name != reference
            else []
        )
        spread = f" ({min(rounds):.2f}–{max(rounds):.2f})" if len(rounds) > 1 else ""
        label = peer.name
        if done[0]["messages"] < len(records) and protocol == "online" and reference:
            ref_done = next(r for r in runs[reference] if r.get("scores"))
            ref = measures(scores_file(ref_done), 0.0, first=done[0]["messages"])
            label += (
                f" (first {done[0]['messages']:,} messages only; filterd default on them: (1−AUC)% "
                f"{ref['one_minus_auc_pct']:.3f}, spec@R=1 {ref['spec']:.3f})"
            )
        mark = "¹" if count == 1 else ""
        peak = max(r["peak_kb"] for r in done) / 1024
        kind = "ᶜ" if peer.memory_kind == "child" else "ʳ"
        lines.append(
            f"| {label} | {m['auc']:.4f} | {m['one_minus_auc_pct']:.3f} | {m['lam_pct']:.2f} "
            f"| {m['h_pct']:.1f} | "
            f"{m['spec']:.3f} | {speed:,.0f}{mark} | {ratio:.2f}{spread} | {peak:,.0f}{kind} |"
        )
    return "\n".join(lines) + "\n"


def scores_file(result: RunResult) -> Path:
    """The file of a run's per-message scores (the first repetition of each peer writes one)."""
    path = result.get("scores")
    if path is None:
        raise ValueError("a run without scores")
    return Path(path)


def round_ratios(reference: list[RunResult], peer: list[RunResult]) -> list[float]:
    """The reference's speed over the peer's in each round both ran: repetitions go round-robin,
    so a round's two runs met the same state of the machine."""
    return [
        (r["messages"] / r["seconds"]) / (p["messages"] / p["seconds"])
        for r, p in zip(reference, peer, strict=False)
        if "error" not in r and "error" not in p
    ]


NOTES = """\
Columns: AUC (ties ½), (1−AUC)%, lam% (TREC logistic average misclassification at the peer's own
Bayes decision: probability 0.5, log-odds/pR/S−H 0), h=.1% (spam missed at 0.1 % ham
misclassification, 100 − 100·R@FPR.1%), spec@R=1 (ham kept at 100 % spam recall), all by
`filterd.evaluation.ranking` on the per-message scores; msg/s = messages learned + scored per \
second of
wall time, including the peer's own parsing and process start-ups, median over the repetitions
(¹ = one run: the first run took longer than --repeat-budget); "filterd default ÷ peer" = \
the speed of
filterd's default configuration over the peer's, in the same protocol (> 1:
filterd faster), the ratio of the medians, then in brackets the lowest and highest ratio within
one round of the repetitions; peak MB: ᶜ = the largest peak RSS of one of the peer's own \
processes (
is measured by GNU time on the run's last messages, for one-process-per-message peers, by the
SpamAssassin driver's own VmHWM and by GNU time around sa-learn), ʳ = peak RSS of the worker \
during the run less its RSS before (VmHWM reset via
/proc/self/clear_refs), for in-process Python peers.
"""


def write_results(
    path: Path,
    command: str,
    versions: dict[str, str],
    skipped: dict[str, str],
    sections: dict[str, list[str]],
    args: argparse.Namespace,
) -> None:
    """Replace each corpus's section of RESULTS.md (kept between markers), keep the others."""
    old = path.read_text() if path.exists() else ""
    kept: dict[str, str] = {}
    for chunk in old.split("<!-- corpus: ")[1:]:
        name, _, body = chunk.partition(" -->\n")
        kept[name] = body.split("<!-- end -->")[0]
    cpu = cpu_model()
    stamp = datetime.date.today().isoformat()
    for name, tables in sections.items():
        lines = [
            f"Produced on {stamp} by `{command}`\n"
            f"({os.cpu_count()} cores, {cpu}; other work shared the machine; "
            f"{args.repeats} repetitions, --repeat-budget {args.repeat_budget:g} s"
            + (f"; first {args.limit} messages" if args.limit else "")
            + (f"; labels merged: {', '.join(args.relabel)}" if args.relabel else "")
            + ").\n",
            "Versions: " + "; ".join(versions.values()) + ".\n",
        ]
        if skipped:
            lines.append("Skipped: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()) + ".\n")
        kept[name] = "\n".join(lines) + "\n" + "\n".join(tables)
    text = [HEADER, NOTES]
    for name, body in kept.items():
        text.append(f"<!-- corpus: {name} -->\n{body.rstrip()}\n<!-- end -->\n")
    path.write_text("\n".join(text))
    print(f"tables written to {path}", file=sys.stderr)


HEADER = """\
# filterd side by side with bogofilter, SpamAssassin's Bayes, CRM114, scikit-learn and River

Produced by `python bench/peers/run.py` (see docs/benchmarks.md); per-message scores are in
`bench/peers/out/` (not in git). One section per corpus, each with the command and date that
produced it. The same messages in the same order for every row: the split of
`filterd.evaluation.corpus.train_test_split` (the one `filterd evaluate` uses) and the TREC \
immediate-feedback
replay in `order`. Text messages (SMS) reach the mail filters wrapped as a minimal e-mail
(adapters.wrap_as_mail); e-mail corpora as their raw files.

How each peer is driven (bench/peers/adapters.py):
- bogofilter: a private wordlist directory (`-d`), the system configuration, `-s`/`-n` to register,
  `-TT` for the spamicity (16 digits); one process per step (online: score, then register), or
  bulk mode (`-b`, file names on stdin: register the spam, the ham, then score the test part;
  split protocol only, as bulk mode cannot interleave scoring and learning).
- SpamAssassin: Bayes alone (only the Check and Bayes plugins, the shipped BAYES_* rules and
  Bayes stop-words, a private bayes_path, `lock_method flock`, auto-learning off,
  `bayes_min_ham_num`/`bayes_min_spam_num` 1 instead of 200 so that it scores from the start);
  one Perl process for the stream through Mail::SpamAssassin (sa_bayes.pl: `learn` as sa-learn
  does, `check` as spamd does), score = Bayes's spam probability (0.5 when Bayes has no opinion);
  the second row trains with the `sa-learn` command (`--spam`/`--ham -f LIST`, then `--sync`).
- CRM114: `<osb unique microgroom>` on the first 16,000 bytes, tokens `[[:graph:]]+`, nonspam.css |
  spam.css, thick-threshold training (mailfilter.cf's 5.0), one `crm` process per message
  (crm_osb.crm); score = −pR(nonspam). mailreaver.crm itself was not used: it needs its cache
  directories, rewrites and the `openssl` base64 expansion per message.
- scikit-learn: HashingVectorizer(n_features=2**18, alternate_sign=False) as in its out-of-core
  example (the default 2**20 is ~9× slower one at a time: partial_fit recomputes every feature's
  log-probability), MultinomialNB / ComplementNB(α=1), partial_fit one message at a time or in
  mini-batches of 100 (online: a batch is scored before it is learned, so feedback comes up to 99
  messages late); score = joint log-likelihood spam − ham.
- River: BagOfWords() + naive_bayes.MultinomialNB / ComplementNB, learn_one and
  joint_log_likelihood one at a time. River's ComplementNB sums over the whole vocabulary for each
  token of each message (O(|x|·V)); on the e-mail corpus it runs on a prefix of the stream.
- filterd: the code path of `filterd evaluate` (filterd.evaluation.protocols; each worker \
checks its figures
  against `evaluate()`), tokenization included in the time; "default" is \
`filterd.bayes.model.DEFAULT_SPEC`,
  the fusion, what `filterd run` uses out of the box.
"""


if __name__ == "__main__":
    main()
