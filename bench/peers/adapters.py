"""The peers, each driven the way its users drive it, beside filterd's candidates (candidates.py).

Every adapter gets the same messages in the same order and returns one spam score per scored
message (higher = more likely spam) and the threshold τ of its own Bayes decision (0.5 for a
probability, 0 for log-odds, pR or Fisher's S − H), at which lam% is taken.

split   `split(train, test, work)`: learn the training part in corpus order, score the test part.
online  `online(stream, work)`: TREC immediate feedback, score each message then learn its label.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from candidates import FILTERD_CANDIDATES, Filterd, candidate

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Msg:
    id: str
    spam: bool
    text: str  # the corpus text (the raw mail for e-mail corpora)
    format: str  # "text" | "email"
    path: str  # the message as a file: the raw mail, or a text message wrapped as a minimal e-mail


def wrap_as_mail(msg_id: str, text: str) -> str:
    """A text message (SMS) as the smallest plausible RFC 822 mail for mail filters.

    A unique Message-ID, because SpamAssassin's Bayes skips a message id it has already learned
    (and the SMS corpus repeats 403 texts); every other header is the same for all messages."""
    return (
        "From: sender@sms.invalid\nTo: recipient@sms.invalid\nSubject: \n"
        f"Message-ID: <{msg_id}@sms.invalid>\nMIME-Version: 1.0\n"
        "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\n"
        f"{text}\n"
    )


class Adapter(Protocol):
    """What run.py reads of every adapter, the peers' and filterd's: its name, which runs it
    takes, the threshold of its own decision, how its memory is measured ("child": its own
    processes', by GNU time; "rss": the worker's), and its warm-up outside the timed run."""

    @property
    def name(self) -> str: ...
    @property
    def family(self) -> str: ...
    @property
    def protocols(self) -> tuple[str, ...]: ...
    @property
    def tau(self) -> float: ...
    @property
    def memory_kind(self) -> str: ...
    def warm(self) -> None: ...


class Peer(Adapter, Protocol):
    """A peer: scores of the `Msg`s it is given (see the module's docstring)."""

    def split(self, train: Sequence[Msg], test: Sequence[Msg], work: Path) -> np.ndarray: ...
    def online(self, stream: Sequence[Msg], work: Path) -> np.ndarray: ...


@runtime_checkable
class Probed(Protocol):
    """A peer whose memory is its processes' (memory_kind "child"), measured by a probe run on
    the `last` messages after the timed run: the peak RSS in KB."""

    def probe(self, work: Path, last: Sequence[Msg]) -> int: ...


class Unavailable(Exception):
    """The peer cannot run here; the message says why."""


def _apt_install(package: str) -> str | None:
    """Install a Debian package; None on success, else why not."""
    if shutil.which("apt-get") is None:
        return "no apt-get on this machine"
    sudo = [] if os.geteuid() == 0 else (["sudo", "-n"] if shutil.which("sudo") else None)
    if sudo is None:
        return "not root and no sudo"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for attempt in range(2):
        done = subprocess.run(
            [*sudo, "apt-get", "install", "-y", "-q", package],
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode == 0:
            return None
        if attempt == 0:
            subprocess.run([*sudo, "apt-get", "update", "-q"], env=env, capture_output=True)
    return f"apt-get install {package} failed: {done.stderr.strip().splitlines()[-1:]}"


def _pip_install(*packages: str) -> str | None:
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", *packages], capture_output=True, text=True
    )
    return (
        None
        if done.returncode == 0
        else f"pip install {' '.join(packages)} failed: {done.stderr.strip()[-200:]}"
    )


def ensure(family: str) -> tuple[bool, str]:
    """Install what `family` needs if it is missing: (available, version or the reason it is
    not)."""
    # GNU time measures the peak memory of their processes
    if (
        family in ("bogofilter", "spamassassin", "crm114")
        and not Path("/usr/bin/time").exists()
        and (why := _apt_install("time"))
    ):
        return False, why
    if family == "bogofilter":
        if shutil.which("bogofilter") is None and (why := _apt_install("bogofilter")):
            return False, why
        return True, _first_line(["bogofilter", "-V"])
    if family == "spamassassin":
        probe = ["perl", "-MMail::SpamAssassin", "-e", "print Mail::SpamAssassin::Version()"]
        if subprocess.run(probe, capture_output=True).returncode != 0 and (
            why := _apt_install("spamassassin")
        ):
            return False, why
        if shutil.which("sa-learn") is None:
            return False, "sa-learn not found after installing spamassassin"
        return True, "SpamAssassin " + subprocess.run(
            probe, capture_output=True, text=True
        ).stdout.strip()
    if family == "crm114":
        if shutil.which("crm") is None and (why := _apt_install("crm114")):
            return False, why
        return True, _first_line(["crm", "-v"], stderr=True)
    if family == "sklearn":
        if importlib.util.find_spec("sklearn") is None and (why := _pip_install("scikit-learn")):
            return False, why
        import sklearn

        return True, f"scikit-learn {sklearn.__version__}"
    if family == "river":
        if importlib.util.find_spec("river") is None and (why := _pip_install("river")):
            return False, why
        import river

        return True, f"river {river.__version__}"
    if family == "filterd":
        import filterd

        return True, f"filterd {getattr(filterd, '__version__', '')}".strip()
    return False, f"unknown peer {family!r}"


def _first_line(command: list[str], stderr: bool = False) -> str:
    done = subprocess.run(command, capture_output=True, text=True)
    text = (done.stderr if stderr and done.stderr.strip() else done.stdout).strip()
    return text.splitlines()[0].strip() if text else command[0]


# --- bogofilter -------------------------------------------------------------------------------


class Bogofilter:
    """bogofilter with a private wordlist directory (-d), its system configuration
    (/etc/bogofilter.cf), -s/-n registration and -TT spamicity (16 significant digits)."""

    family = "bogofilter"
    tau = 0.5
    warm = staticmethod(lambda: None)
    memory_kind = "child"

    def __init__(self, bulk: bool) -> None:
        self.bulk = bulk
        self.name = "bogofilter, bulk (-b)" if bulk else "bogofilter, 1 process/msg"
        # bulk mode reads message files by the batch: it cannot interleave scoring and learning
        self.protocols = ("split",) if bulk else ("split", "online")

    def split(self, train: Sequence[Msg], test: Sequence[Msg], work: Path) -> np.ndarray:
        db = _fresh(work / "bogofilter")
        if self.bulk:
            for flag, spam in (("-s", True), ("-n", False)):
                names = "".join(m.path + "\n" for m in train if m.spam == spam)
                _run(["bogofilter", "-d", str(db), flag, "-b"], input=names.encode())
            # exit status 0, 1, 2: the last message was spam, ham, unsure; 3: an error
            out = _run(
                ["bogofilter", "-d", str(db), "-TT", "-b"],
                input="".join(m.path + "\n" for m in test).encode(),
                ok=(0, 1, 2),
            )
            by_path = dict(
                line.rsplit(" ", 1) for line in out.decode().splitlines() if line.strip()
            )
            return np.array([float(by_path[m.path]) for m in test])
        for m in train:
            self._register(db, m)
        return np.array([self._score(db, m) for m in test])

    def online(self, stream: Sequence[Msg], work: Path) -> np.ndarray:
        db = _fresh(work / "bogofilter")
        scores = np.empty(len(stream))
        for i, m in enumerate(stream):
            scores[i] = self._score(db, m)
            self._register(db, m)
        return scores

    def probe(self, work: Path, last: Sequence[Msg]) -> int:
        """Peak RSS (KB) of its processes on the final wordlist: scoring and registering the
        run's last messages (one process each), or the bulk scoring and registration again."""
        db = str(work / "bogofilter")
        if self.bulk:
            names = "".join(m.path + "\n" for m in last).encode()
            return max(
                timed_kb(["bogofilter", "-d", db, "-TT", "-b"], input=names),
                timed_kb(["bogofilter", "-d", db, "-s", "-b"], input=names),
            )
        return max(
            max(
                timed_kb(["bogofilter", "-d", db, "-TT"], m.path),
                timed_kb(["bogofilter", "-d", db, "-s" if m.spam else "-n"], m.path),
            )
            for m in last
        )

    def _score(self, db: Path, m: Msg) -> float:
        with open(m.path, "rb") as f:
            done = subprocess.run(
                ["bogofilter", "-d", str(db), "-TT"], stdin=f, capture_output=True
            )
        if done.returncode == 3:  # no wordlist yet (nothing registered): no opinion
            return 0.5
        return float(done.stdout)

    def _register(self, db: Path, m: Msg) -> None:
        with open(m.path, "rb") as f:
            subprocess.run(
                ["bogofilter", "-d", str(db), "-s" if m.spam else "-n"], stdin=f, check=True
            )


# --- SpamAssassin -----------------------------------------------------------------------------

SA_RULES = Path("/usr/share/spamassassin")
SA_SETTINGS = """\
use_bayes 1
use_bayes_rules 1
bayes_auto_learn 0
bayes_auto_expire 1
bayes_path {db}/bayes
lock_method flock
bayes_min_ham_num 1
bayes_min_spam_num 1
"""


class SpamAssassin:
    """SpamAssassin's Bayes alone: a configuration that loads only the Check and Bayes plugins
    and the shipped BAYES_* rules (23_bayes.cf, 60_bayes_stopwords.cf), a private bayes_path,
    auto-learning off, Bayes usable from the first learned spam and ham (bayes_min_*_num 1;
    the default 200/200 would leave the first few hundred messages unscored). Score: Bayes's
    spam probability. With `sa_learn`, the split protocol trains with the `sa-learn` command
    (--spam / --ham on the training files) instead of the library."""

    family = "spamassassin"
    tau = 0.5
    warm = staticmethod(lambda: None)
    memory_kind = "child"

    def __init__(self, sa_learn: bool = False) -> None:
        self.sa_learn = sa_learn
        self.name = (
            "SpamAssassin Bayes, sa-learn + 1 scan process"
            if sa_learn
            else "SpamAssassin Bayes, 1 process (Mail::SpamAssassin)"
        )
        self.protocols = ("split",) if sa_learn else ("split", "online")

    def configure(self, work: Path) -> Path:
        config = _fresh(work / "sa-config")
        db = _fresh(work / "sa-db")
        (config / "init.pre").write_text(
            "loadplugin Mail::SpamAssassin::Plugin::Check\n"
            "loadplugin Mail::SpamAssassin::Plugin::Bayes\n"
        )
        for name in (
            "10_default_prefs.cf",
            "20_aux_tlds.cf",
            "23_bayes.cf",
            "60_bayes_stopwords.cf",
        ):
            text = (SA_RULES / name).read_text(errors="replace")
            (config / name).write_text(
                "".join(
                    line for line in text.splitlines(True) if not line.startswith("require_version")
                )
            )
        (config / "99_bayes_only.cf").write_text(SA_SETTINGS.format(db=db))
        (config / "user_prefs").write_text("")
        return config

    def split(self, train: Sequence[Msg], test: Sequence[Msg], work: Path) -> np.ndarray:
        config = self.configure(work)
        if self.sa_learn:
            for flag, spam in (("--spam", True), ("--ham", False)):
                listing = work / f"sa-learn{flag}.txt"
                listing.write_text("".join(m.path + "\n" for m in train if m.spam == spam))
                self.peak_kb = max(
                    self.peak_kb,
                    _run_kb(
                        [
                            "sa-learn",
                            "-C",
                            str(config),
                            "--siteconfigpath",
                            str(config),
                            "-p",
                            str(config / "user_prefs"),
                            "--no-sync",
                            flag,
                            "-f",
                            str(listing),
                        ]
                    ),
                )
            self.peak_kb = max(
                self.peak_kb,
                _run_kb(
                    [
                        "sa-learn",
                        "-C",
                        str(config),
                        "--siteconfigpath",
                        str(config),
                        "-p",
                        str(config / "user_prefs"),
                        "--sync",
                    ]
                ),
            )
            commands = []
        else:
            commands = [f"L\t{'spam' if m.spam else 'ham'}\t{m.path}\n" for m in train]
        commands += [f"S\t-\t{m.path}\n" for m in test]
        return self._drive(config, commands)

    def online(self, stream: Sequence[Msg], work: Path) -> np.ndarray:
        config = self.configure(work)
        return self._drive(
            config, [f"SL\t{'spam' if m.spam else 'ham'}\t{m.path}\n" for m in stream]
        )

    peak_kb = 0

    def probe(self, work: Path, last: Sequence[Msg]) -> int:
        return (
            self.peak_kb
        )  # measured during the run: the driver's own VmHWM, sa-learn under GNU time

    def _drive(self, config: Path, commands: list[str]) -> np.ndarray:
        done = subprocess.run(
            ["perl", str(HERE / "sa_bayes.pl"), str(config)],
            input="".join(commands).encode(),
            capture_output=True,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"sa_bayes.pl exited {done.returncode}: "
                f"{done.stderr.decode(errors='replace')[-500:]}"
            )
        for line in done.stderr.decode(errors="replace").splitlines():
            if line.startswith("VmHWM:"):
                self.peak_kb = max(self.peak_kb, int(line.split()[1]))
        out = done.stdout
        values = [float(v) for v in out.decode().split()]
        return np.array([0.5 if math.isnan(v) else v for v in values])  # no Bayes opinion: neutral


# --- CRM114 -----------------------------------------------------------------------------------


class CRM114:
    """CRM114 OSB (crm_osb.crm: mailfilter.cf's classifier and thick-threshold training), one
    process per message; score = −pR(nonspam)."""

    family = "crm114"
    name = "CRM114 OSB, 1 process/msg"
    warm = staticmethod(lambda: None)
    protocols = ("split", "online")
    tau = 0.0
    memory_kind = "child"

    def _init(self, work: Path) -> Path:
        db = _fresh(work / "crm114")
        for css in (
            "nonspam.css",
            "spam.css",
        ):  # as mailtrainer.crm does: learn a newline into each
            _run(
                [
                    "crm",
                    "-{ learn <osb unique microgroom> (" + str(db / css) + ") /[[:graph:]]+/ }",
                ],
                input=b"\n",
            )
        return db

    def probe(self, work: Path, last: Sequence[Msg]) -> int:
        """Peak RSS (KB) of a classify-and-train process on the final .css files."""
        db = work / "crm114"
        return max(
            timed_kb(
                [
                    "crm",
                    str(HERE / "crm_osb.crm"),
                    f"--dir={db}",
                    f"--truth={'spam' if m.spam else 'good'}",
                ],
                m.path,
            )
            for m in last
        )

    def _step(self, db: Path, m: Msg, truth: str | None) -> float:
        command = ["crm", str(HERE / "crm_osb.crm"), f"--dir={db}"] + (
            [f"--truth={truth}"] if truth else []
        )
        with open(m.path, "rb") as f:
            done = subprocess.run(command, stdin=f, capture_output=True, check=True)
        return -float(done.stdout)

    def split(self, train: Sequence[Msg], test: Sequence[Msg], work: Path) -> np.ndarray:
        db = self._init(work)
        for m in train:
            self._step(db, m, "spam" if m.spam else "good")
        return np.array([self._step(db, m, None) for m in test])

    def online(self, stream: Sequence[Msg], work: Path) -> np.ndarray:
        db = self._init(work)
        return np.array([self._step(db, m, "spam" if m.spam else "good") for m in stream])


# --- scikit-learn -----------------------------------------------------------------------------


class _Vectorizer(Protocol):
    """What the adapter calls of scikit-learn's HashingVectorizer (scikit-learn has no types):
    texts to a sparse matrix."""

    def transform(self, texts: list[str]) -> object: ...


class _SklearnNB(Protocol):
    """What the adapter calls of scikit-learn's MultinomialNB and ComplementNB."""

    def partial_fit(self, X: object, y: list[int], classes: list[int]) -> object: ...
    def predict_joint_log_proba(self, X: object) -> np.ndarray: ...


class Sklearn:
    """HashingVectorizer as in scikit-learn's out-of-core example (2**18 features,
    alternate_sign=False, default L2 norm) + MultinomialNB / ComplementNB (α = 1) with
    partial_fit, on the message text (the raw mail for e-mail corpora). Score: joint
    log-likelihood spam − ham.
    batch = 1: one message at a time; batch > 1: mini-batches, which in the online protocol
    score a whole batch before learning it (feedback delayed by up to batch − 1 messages)."""

    family = "sklearn"
    protocols = ("split", "online")
    tau = 0.0
    memory_kind = "rss"

    def __init__(self, estimator: str, batch: int, n_features: int = 2**18) -> None:
        self.estimator, self.batch, self.n_features = estimator, batch, n_features
        kind = "one at a time" if batch == 1 else f"mini-batches of {batch}"
        self.name = (
            f"scikit-learn {'MultinomialNB' if estimator == 'mnb' else 'ComplementNB'}, {kind}"
        )

    def warm(self) -> None:
        """Imports, outside the timed run."""
        vectorizer, clf = self._make()
        clf.partial_fit(vectorizer.transform(["warm up", "up"]), [0, 1], classes=[0, 1])
        self._scores(clf, vectorizer.transform(["warm"]))

    def _make(self) -> tuple[_Vectorizer, _SklearnNB]:
        from sklearn.feature_extraction.text import HashingVectorizer
        from sklearn.naive_bayes import ComplementNB, MultinomialNB

        vectorizer: _Vectorizer = HashingVectorizer(
            n_features=self.n_features, alternate_sign=False
        )
        clf: _SklearnNB = MultinomialNB() if self.estimator == "mnb" else ComplementNB()
        return vectorizer, clf

    @staticmethod
    def _scores(clf: _SklearnNB, X: object) -> np.ndarray:
        jll = clf.predict_joint_log_proba(X)
        scores: np.ndarray = jll[:, 1] - jll[:, 0]
        return scores

    def split(self, train: Sequence[Msg], test: Sequence[Msg], work: Path) -> np.ndarray:
        vectorizer, clf = self._make()
        for lo in range(0, len(train), self.batch):
            chunk = train[lo : lo + self.batch]
            clf.partial_fit(
                vectorizer.transform([m.text for m in chunk]),
                [int(m.spam) for m in chunk],
                classes=[0, 1],
            )
        return np.concatenate(
            [
                self._scores(
                    clf, vectorizer.transform([m.text for m in test[lo : lo + self.batch]])
                )
                for lo in range(0, len(test), self.batch)
            ]
        )

    def online(self, stream: Sequence[Msg], work: Path) -> np.ndarray:
        vectorizer, clf = self._make()
        scores = np.zeros(len(stream))
        fitted = False
        for lo in range(0, len(stream), self.batch):
            chunk = stream[lo : lo + self.batch]
            X = vectorizer.transform([m.text for m in chunk])
            if fitted:
                scores[lo : lo + len(chunk)] = self._scores(clf, X)
            clf.partial_fit(X, [int(m.spam) for m in chunk], classes=[0, 1])
            fitted = True
        return scores


# --- River ------------------------------------------------------------------------------------


class _BagOfWords(Protocol):
    """What the adapter calls of River's BagOfWords (River has no types): a text's word counts."""

    def transform_one(self, text: str) -> dict[str, int]: ...


class _RiverNB(Protocol):
    """What the adapter calls of River's MultinomialNB and ComplementNB."""

    def learn_one(self, x: dict[str, int], y: bool) -> None: ...
    def joint_log_likelihood(self, x: dict[str, int]) -> dict[bool, float]: ...


class River:
    """River feature_extraction.BagOfWords (defaults) + naive_bayes.MultinomialNB /
    ComplementNB (α = 1), learn_one / joint_log_likelihood one message at a time.
    Score: joint log-likelihood spam − ham (0 until both classes have been seen)."""

    family = "river"
    protocols = ("split", "online")
    tau = 0.0
    memory_kind = "rss"

    def __init__(self, estimator: str) -> None:
        self.estimator = estimator
        self.name = (
            f"River {'MultinomialNB' if estimator == 'mnb' else 'ComplementNB'}, one at a time"
        )

    def warm(self) -> None:
        bow, nb = self._make()
        nb.learn_one(bow.transform_one("warm up"), True)
        nb.learn_one(bow.transform_one("up"), False)
        self._score(nb, bow.transform_one("warm"))

    def _make(self) -> tuple[_BagOfWords, _RiverNB]:
        from river import feature_extraction, naive_bayes

        bow: _BagOfWords = feature_extraction.BagOfWords()
        nb: _RiverNB = (
            naive_bayes.MultinomialNB() if self.estimator == "mnb" else naive_bayes.ComplementNB()
        )
        return bow, nb

    @staticmethod
    def _score(nb: _RiverNB, x: dict[str, int]) -> float:
        jll = nb.joint_log_likelihood(x)
        return jll[True] - jll[False] if True in jll and False in jll else 0.0

    def split(self, train: Sequence[Msg], test: Sequence[Msg], work: Path) -> np.ndarray:
        bow, nb = self._make()
        for m in train:
            nb.learn_one(bow.transform_one(m.text), m.spam)
        return np.array([self._score(nb, bow.transform_one(m.text)) for m in test])

    def online(self, stream: Sequence[Msg], work: Path) -> np.ndarray:
        bow, nb = self._make()
        scores = np.zeros(len(stream))
        for i, m in enumerate(stream):
            x = bow.transform_one(m.text)
            scores[i] = self._score(nb, x)
            nb.learn_one(x, m.spam)
        return scores


# --- helpers ----------------------------------------------------------------------------------


def timed_kb(command: list[str], stdin_path: str | None = None, input: bytes | None = None) -> int:
    """Peak RSS (KB) of one run of `command`, by GNU time (which forks it from a small process).

    A child's ru_maxrss seen from the Python worker would include the worker's own RSS at fork
    time (Linux carries the pre-exec high-water mark over exec), hence this probe."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as out, contextlib.ExitStack() as stack:
        stdin = stack.enter_context(open(stdin_path, "rb")) if stdin_path else None
        subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", out.name, *command],
            stdin=stdin,
            input=input,
            capture_output=True,
        )
        text = out.read().strip().splitlines()
    return int(text[-1]) if text and text[-1].isdigit() else 0


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def _run_kb(command: list[str]) -> int:
    """Run `command` (which must succeed) under GNU time; its peak RSS in KB."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as out:
        _run(["/usr/bin/time", "-f", "%M", "-o", out.name, *command])
        text = out.read().strip().splitlines()
    return int(text[-1]) if text and text[-1].isdigit() else 0


def _run(command: list[str], input: bytes | None = None, ok: tuple[int, ...] = (0,)) -> bytes:
    done = subprocess.run(command, input=input, capture_output=True)
    if done.returncode not in ok:
        raise RuntimeError(
            f"{' '.join(command[:3])}… exited {done.returncode}: "
            f"{done.stderr.decode(errors='replace')[-500:]}"
        )
    return done.stdout


def all_peers(candidates: Sequence[str] = ()) -> list[Peer | Filterd]:
    return [
        Bogofilter(bulk=False),
        Bogofilter(bulk=True),
        SpamAssassin(),
        SpamAssassin(sa_learn=True),
        CRM114(),
        Sklearn("mnb", 1),
        Sklearn("cnb", 1),
        Sklearn("mnb", 100),
        Sklearn("cnb", 100),
        River("mnb"),
        River("cnb"),
        *FILTERD_CANDIDATES,
        *(candidate(c) for c in candidates),
    ]
