"""filterd installed from its wheel, as an image or a package would install it (not a checkout):
it creates its store, learns, scores, calibrates and runs against a broker, from any working
directory, and prints its example configuration."""

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from filterd.cli.corpus_files import write_corpus
from filterd.evaluation.synth import SynthConfig, generate
from filterd.store.database import head
from tests.daemon.conftest import ids_of, message, produce, read_all, write_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding filterd installed from a freshly built wheel (dependencies, and the
    build's setuptools: this environment's)."""
    build = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"),
            *("-w", str(build), str(ROOT)),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = build.glob("filterd-*.whl")
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return target


def filterd(
    installed: Path, cwd: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(installed)}
    return subprocess.run(
        [sys.executable, "-m", "filterd", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_installed_package_creates_its_store_learns_and_scores(
    installed: Path, tmp_path: Path
) -> None:
    where = subprocess.run(
        [sys.executable, "-c", "import filterd; print(filterd.__file__)"],
        env={**os.environ, "PYTHONPATH": str(installed)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.startswith(str(installed))  # the wheel's filterd, not the checkout's
    # the workbench's pages and scripts ship in the package (served from it, never a CDN)
    web = installed / "filterd" / "web"
    assert {p.name for p in (web / "templates").glob("*.html")} >= {
        "queue.html",
        "message.html",
        "model.html",
        "audit.html",
    }
    assert (web / "static" / "workbench.js").exists() and list(
        (web / "static").glob("htmx-*.min.js")
    )
    db = f"sqlite:///{tmp_path / 'store.db'}"
    upgraded = filterd(installed, tmp_path, "db", "upgrade", "--db", db)
    assert upgraded.returncode == 0, upgraded.stderr
    assert f"at revision {head()}" in upgraded.stdout
    corpus = tmp_path / "train.jsonl"
    write_corpus(generate(SynthConfig(n_messages=300, seed=6)), corpus)
    created = filterd(installed, tmp_path, "model", "create", "default", "--db", db)
    assert created.returncode == 0, created.stderr
    learned = filterd(installed, tmp_path, "learn", str(corpus), "--db", db)
    assert learned.returncode == 0, learned.stderr
    lines = "".join(json.dumps({"id": f"m{i}", "text": t}) + "\n" for i, t in enumerate(["a", "b"]))
    scored = filterd(installed, tmp_path, "score", "--db", db, stdin=lines)
    assert scored.returncode == 0, scored.stderr
    assert [json.loads(line)["message_id"] for line in scored.stdout.splitlines()] == ["m0", "m1"]
    calibrated = filterd(
        installed,
        tmp_path,
        "calibrate",
        "--db",
        db,
        "--target-recall",
        "0.5",  # a first τ takes the conservative bound: 5 positives (the holdout has 7)
        "--min-positives",
        "1",
        "--min-negatives",
        "10",
        "--json",
    )
    assert calibrated.returncode == 0, calibrated.stderr
    assert json.loads(calibrated.stdout)["version"] == 1
    example = filterd(installed, tmp_path, "config", "example")
    assert example.returncode == 0 and "[kafka]" in example.stdout


def test_the_wheel_requires_every_codec_and_the_installed_package_reads_them(
    installed: Path, tmp_path: Path
) -> None:
    """A fresh install decodes what librdkafka and the Java client compress with: the wheel
    requires the codec libraries, and with them kafka-python has every codec."""
    (metadata,) = installed.glob("filterd-*.dist-info/METADATA")
    required = {
        re.split(r"[\s<>=!~;\[(]", line.removeprefix("Requires-Dist:").strip())[0].lower()
        for line in metadata.read_text().splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    }
    assert {"kafka-python", "crc32c", "python-snappy", "lz4", "zstandard"} <= required
    probe = (
        "import filterd.kafka.settings as s, kafka.codec as c;"
        "print(s.codecs_missing(), c.has_snappy(), c.has_lz4(), c.has_zstd())"
    )
    codecs = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(installed)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert codecs.stdout.split() == ["[]", "True", "True", "True"]


def test_the_installed_package_runs_against_a_broker(
    installed: Path, tmp_path: Path, kafka_config: dict[str, Any], topics: dict[str, str]
) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    corpus = tmp_path / "train.jsonl"
    write_corpus(generate(SynthConfig(n_messages=300, seed=7)), corpus)
    refused = filterd(installed, tmp_path, "run", "--db", db)
    assert refused.returncode != 0 and "filterd db upgrade" in refused.stderr
    assert not (tmp_path / "store.db").exists()  # a mistyped --db creates nothing
    assert filterd(installed, tmp_path, "db", "upgrade", "--db", db).returncode == 0
    assert filterd(installed, tmp_path, "model", "create", "default", "--db", db).returncode == 0
    assert filterd(installed, tmp_path, "learn", str(corpus), "--db", db).returncode == 0
    config = write_config(tmp_path, kafka_config, topics, db)
    produce(kafka_config, topics["messages"], [message(i) for i in range(5)])
    env = {**os.environ, "PYTHONPATH": str(installed)}
    with open(tmp_path / "run.log", "wb") as log:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "filterd", "run", "--config", str(config)],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        decisions = read_all(kafka_config, topics["decisions"], until=lambda r: len(r) >= 5)
    finally:
        daemon.send_signal(signal.SIGTERM)
        status = daemon.wait(30)
    log_text = (tmp_path / "run.log").read_text()
    assert sorted(ids_of(decisions)) == [f"m{i}" for i in range(5)], log_text[-3000:]
    assert status == 0, log_text[-3000:]
