"""config/systemd/: `systemd-analyze verify` on the shipped units (only the path of the
filterd executable rewritten, from /opt/filterd/bin/filterd to this environment's, since
verify checks that it exists), their hardening, their command lines against the real CLI, and
the backup unit's shell wrapper run for real, under MemoryDenyWriteExecute where the kernel
can impose it (PR_SET_MDWE, the same refusal of writable-executable memory)."""

import ctypes
import gzip
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from filterd.cli import main

UNITS = Path(__file__).resolve().parents[2] / "config" / "systemd"
INSTALLED = "/opt/filterd/bin/filterd"  # where the units expect filterd (docs/operations.md)
FILTERD = Path(sys.executable).parent / "filterd"
ROLES = ("scorer", "learner")

needs_systemd_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed"
)

# the sandboxing every service unit carries, whatever else it sets
HARDENING = {
    "DynamicUser": "yes",
    "User": "filterd",
    "UMask": "0077",
    "NoNewPrivileges": "yes",
    "CapabilityBoundingSet": "",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "ProtectKernelTunables": "yes",
    "ProtectKernelModules": "yes",
    "ProtectKernelLogs": "yes",
    "ProtectControlGroups": "yes",
    "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
    "RestrictNamespaces": "yes",
    "RestrictRealtime": "yes",
    "LockPersonality": "yes",
    "MemoryDenyWriteExecute": "yes",
    "SystemCallFilter": "@system-service",
    "ConfigurationDirectory": "filterd",
    "EnvironmentFile": "-/etc/filterd/env",
}


def settings(path: Path) -> dict[str, list[str]]:
    """KEY -> its values, in order, from a unit file (comments and sections dropped)."""
    found: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def argv(command: str) -> list[str]:
    """A systemd command line as the arguments it runs: quotes as systemd parses them, then
    its escapes ("%%" and "$$") undone."""
    return [arg.replace("%%", "%").replace("$$", "$") for arg in shlex.split(command)]


def verify(*paths: Path) -> str:
    """What `systemd-analyze verify` says about the unit files (empty: no warning, no error)."""
    result = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return (result.stdout + result.stderr).strip() or ("" if result.returncode == 0 else "failed")


@pytest.fixture
def units(tmp_path: Path) -> Path:
    """The shipped units in a directory of their own, calling this environment's filterd."""
    assert FILTERD.exists(), f"{FILTERD}: install filterd into the environment running the tests"
    shutil.copytree(UNITS, tmp_path, dirs_exist_ok=True)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            path.write_text(path.read_text().replace(INSTALLED, str(FILTERD)))
    return tmp_path


def shipped(suffix: str) -> list[Path]:
    return sorted(UNITS.glob(f"*.{suffix}"))


@needs_systemd_analyze
def test_systemd_analyze_verifies_every_unit(units: Path) -> None:
    files = [units / p.name for p in (*shipped("service"), *shipped("timer"))]
    instances = [units / f"filterd@{role}.service" for role in ROLES]
    assert len(files) >= 6  # filterd@, migrate, prune and export services, two timers
    assert verify(*files, *instances) == ""


@needs_systemd_analyze
def test_verify_rejects_a_broken_unit(units: Path) -> None:
    """The check above can fail: a misspelt key, and an executable that does not exist."""
    text = (units / "filterd@.service").read_text()
    (units / "filterd@.service").write_text(text.replace("PrivateTmp=", "PrivateTemp="))
    assert "Unknown key 'PrivateTemp'" in verify(units / "filterd@scorer.service")
    (units / "filterd@.service").write_text(text.replace(str(FILTERD), "/nonexistent/filterd"))
    assert "is not executable" in verify(units / "filterd@scorer.service")


@needs_systemd_analyze
def test_security_exposure_is_low(units: Path) -> None:
    """`systemd-analyze security` scores exposure from 0 (sandboxed) to 10 (exposed)."""
    result = subprocess.run(
        ["systemd-analyze", "security", "--offline=yes", str(units / "filterd@scorer.service")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    if result.returncode != 0 or match is None:
        pytest.skip(
            f"systemd-analyze security --offline does not work here: {result.stderr.strip()}"
        )
    print(match.group())
    assert float(match.group(1)) <= 2.0


@pytest.mark.parametrize("path", shipped("service"), ids=lambda p: p.name)
def test_service_is_sandboxed(path: Path) -> None:
    found = settings(path)
    for key, value in HARDENING.items():
        assert value in found.get(key, []), f"{path.name}: {key}={value} missing"
    assert "FILTERD_CONFIG=/etc/filterd/filterd.toml" in found.get("Environment", [])
    assert found["StateDirectory"][0].split()[0] == "filterd"


@pytest.mark.parametrize("path", shipped("service"), ids=lambda p: p.name)
def test_service_can_open_enough_files(path: Path) -> None:
    """A limit far above systemd's default soft limit of 1,024: the daemon's servers keep at
    most a quarter of it in connections each (docs/operations.md)."""
    (limit,) = settings(path)["LimitNOFILE"]
    assert limit.isdigit() and 16384 <= int(limit) <= 1048576, limit


def test_daemon_unit_restarts_except_after_the_dead_letter_guard() -> None:
    found = settings(UNITS / "filterd@.service")
    assert found["ExecStart"] == [f"{INSTALLED} run --role %i"]
    assert found["Restart"] == ["on-failure"]
    # exit status 3: the dead-letter guard stopped the daemon (filterd run --help)
    assert found["RestartPreventExitStatus"] == ["3"]
    # SIGTERM stops within seconds (the last commit and the close wait at most 5 s each)
    assert found["KillSignal"] == ["SIGTERM"] and 10 <= int(found["TimeoutStopSec"][0]) <= 60
    assert "filterd-migrate.service" in found["After"][0].split()
    assert "filterd-migrate.service" in found["Wants"][0].split()
    assert found["EnvironmentFile"] == ["-/etc/filterd/env", "-/etc/filterd/%i.env"]
    learner = (UNITS / "learner.env").read_text().splitlines()  # /etc/filterd/learner.env
    # beside the scorer's 9108 on one host
    assert [x for x in learner if not x.startswith("#")] == ["FILTERD_OBSERVE_METRICS_PORT=9109"]


def test_every_timer_starts_its_service() -> None:
    timers = shipped("timer")
    assert {t.stem for t in timers} == {"filterd-prune", "filterd-export"}
    for timer in timers:
        assert (UNITS / f"{timer.stem}.service").exists()
        found = settings(timer)
        assert found["OnCalendar"] and found["Persistent"] == ["true"]
        assert settings(UNITS / f"{timer.stem}.service")["Type"] == ["oneshot"]


def filterd_commands() -> list[tuple[str, list[str]]]:
    """(unit, arguments) of every filterd the units run directly, instances expanded."""
    found = []
    for path in shipped("service"):
        for command in settings(path).get("ExecStart", []):
            args = argv(command)
            if args[0] == INSTALLED:
                for role in ROLES if "%i" in command else ("",):
                    found.append((path.name, [a.replace("%i", role) for a in args[1:]]))
    return found


def parse(args: list[str]) -> click.Command:
    """The filterd command `args` name, once click has parsed its options: UsageError if the
    command or an option does not exist, or a value does not fit."""
    command: click.Command = main
    context, name, rest = None, "filterd", list(args)
    while isinstance(command, click.Group):  # no group takes options before its command
        context = click.Context(command, info_name=name, parent=context)
        name, rest = rest[0], rest[1:]
        found = command.get_command(context, name)
        if found is None:
            raise click.UsageError(f"no command {name!r}")
        command = found
    command.make_context(name, rest, parent=context)
    return command


@pytest.mark.parametrize(
    "unit,args", filterd_commands(), ids=lambda x: x if isinstance(x, str) else ""
)
def test_command_lines_are_valid_filterd_commands(unit: str, args: list[str]) -> None:
    """Each filterd command line parses with the real CLI: its commands and options exist."""
    assert parse(args).name == args[1 if args[0] in ("db", "model", "topics") else 0]


def test_the_command_line_check_can_fail() -> None:
    with pytest.raises(click.UsageError, match="--unseen-day"):
        parse(["db", "prune", "--unseen-day", "90", "--max-count", "1"])
    with pytest.raises(click.UsageError, match="is not one of"):
        parse(["run", "--role", "%i"])  # an instance name systemd did not expand


def mdwe_prefix() -> list[str]:
    """A command prefix that runs the rest with writable-executable memory refused, as systemd's
    MemoryDenyWriteExecute=yes does (PR_SET_MDWE, Linux 6.3+); [] where the kernel cannot."""
    prctl = getattr(ctypes.CDLL(None), "prctl", None)  # Linux only
    if prctl is None or prctl(66, 0, 0, 0, 0) < 0:  # PR_GET_MDWE: EINVAL before Linux 6.3
        return []
    script = (
        "import ctypes, os, sys\n"
        "if ctypes.CDLL(None).prctl(65, 1, 0, 0, 0): sys.exit('PR_SET_MDWE failed')\n"
        "os.execvp(sys.argv[1], sys.argv[1:])"
    )
    return [sys.executable, "-c", script]


def test_backup_unit_writes_a_dated_export_that_imports(tmp_path: Path) -> None:
    """filterd-export.service's ExecStart and ExecStartPost, run as written (paths moved to
    tmp_path; under MDWE where the kernel has it): a dated gzip export of the model appears, a
    15-day-old one goes, and the export restores into another database."""
    found = settings(UNITS / "filterd-export.service")
    state = tmp_path / "state"
    (state / "backups").mkdir(parents=True)
    old = state / "backups" / "default-20200101T0000Z.jsonl.gz"
    old.write_bytes(b"")
    os.utime(old, (time.time() - 15 * 86400,) * 2)

    def local(command: str) -> list[str]:
        command = command.replace(INSTALLED, str(FILTERD)).replace("/var/lib/filterd", str(state))
        return argv(command)

    url = f"sqlite:///{tmp_path / 'filterd.db'}"
    corpus = str(tmp_path / "corpus.jsonl")
    runner = CliRunner()
    for args in (
        ["synth", corpus, "--messages", "200"],
        ["db", "upgrade", "--db", url],
        ["model", "create", "default", "--db", url],
        ["learn", corpus, "--db", url],
    ):
        assert runner.invoke(main, args).exit_code == 0
    env = {**os.environ, "FILTERD_DATABASE_URL": url}
    prefix = mdwe_prefix()
    if prefix:  # the wrapper works: writable-executable memory is refused under it
        probe = "import mmap; mmap.mmap(-1, 4096, prot=mmap.PROT_WRITE | mmap.PROT_EXEC)"
        assert subprocess.run(
            [*prefix, sys.executable, "-c", probe], capture_output=True
        ).returncode
    (start,), (post,) = found["ExecStart"], found["ExecStartPost"]
    result = subprocess.run(
        [*prefix, *local(start)], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert subprocess.run(local(post), env=env, timeout=60).returncode == 0
    backups = sorted(p.name for p in (state / "backups").iterdir())
    assert len(backups) == 1 and re.fullmatch(r"default-\d{8}T\d{4}Z\.jsonl\.gz", backups[0]), (
        backups
    )
    assert gzip.decompress((state / "backups" / backups[0]).read_bytes())
    restored = f"sqlite:///{tmp_path / 'restored.db'}"
    assert runner.invoke(main, ["db", "upgrade", "--db", restored]).exit_code == 0
    imported = runner.invoke(
        main, ["model", "import", str(state / "backups" / backups[0]), "--db", restored]
    )
    assert imported.exit_code == 0, imported.output
    stats = [
        json.loads(runner.invoke(main, ["model", "stats", "--json", "--db", db]).stdout)
        for db in (url, restored)
    ]
    assert stats[0]["classes"] == stats[1]["classes"] and stats[0]["classes"]
