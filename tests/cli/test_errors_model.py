"""Every error of the model, store and evaluation commands is one line on stderr ("Error: …"),
with a non-zero exit and no traceback: bad estimator parameters, files that cannot be read or
written, database URLs and migrations that cannot work."""

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from filterd.cli import main


def one_line_error(*args: str, env: dict[str, str] | None = None) -> str:
    """The one line a failing command prints on stderr."""
    result = CliRunner().invoke(main, list(args), env=env)
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # not an uncaught error
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A migrated SQLite store with a model 'default' (created empty)."""
    path = tmp_path_factory.mktemp("store") / "store.db"
    url = f"sqlite:///{path}"
    runner = CliRunner()
    assert runner.invoke(main, ["db", "upgrade", "--db", url]).exit_code == 0
    assert runner.invoke(main, ["model", "create", "default", "--db", url]).exit_code == 0
    return url


PARAMETER_ERRORS = [
    (
        ("--variant", "mnb", "--param", "alpha=abc"),
        "invalid value for mnb parameter 'alpha': 'abc' (must be a number > 0)",
    ),
    (
        ("--variant", "mnb", "--param", "alpha=-1"),
        "invalid value for mnb parameter 'alpha': -1 (must be a number > 0)",
    ),
    (
        ("--variant", "pcn", "--param", "A=foo"),
        "invalid value for pcn parameter 'A': 'foo' (must be a number > 0 or min)",
    ),
    (("--variant", "unb", "--param", "lam=1,x"), "invalid value for unb parameter 'lam': '1,x'"),
    (
        ("--variant", "pnbc", "--param", "smoothing=dirichlet"),
        "(must be laplace, absolute, linear or witten_bell)",
    ),
    (("--variant", "robinson_fisher", "--param", "x=2"), "(must be a number > 0 and < 1)"),
    (("--variant", "mnb", "--param", "beta=1"), "no evaluated variant has a parameter 'beta'"),
    (("--variant", "mnb", "--select", "local:x"), "bad selection 'local:x'"),
]


@pytest.mark.parametrize("options, says", PARAMETER_ERRORS)
def test_bad_model_options_of_model_create_and_evaluate(
    db: str, options: tuple[str, ...], says: str
) -> None:
    assert says in one_line_error("model", "create", "x", "--db", db, *options)
    assert says in one_line_error("evaluate", "--demo", *options)


def test_per_class_parameters_must_fit_the_classes(db: str) -> None:
    # the store's models decide target vs rest: one λ or two
    assert "'lam': 3 values for 2 classes (the target, the rest)" in one_line_error(
        "model", "create", "x", "--db", db, "--variant", "unb", "--param", "lam=1,2,3"
    )


def test_bad_grid_values_of_tune() -> None:
    assert "invalid value for mnb parameter 'alpha': 'a'" in one_line_error(
        "tune", "--demo", "--variant", "mnb", "--grid", "alpha=a,b"
    )
    assert "is not KEY=V1,V2" in one_line_error("tune", "--demo", "--grid", "alpha")


def test_a_bad_model_section_in_the_configuration(tmp_path: Path) -> None:
    config = tmp_path / "filterd.toml"
    config.write_text('[model]\nvariant = "mnb"\nparams = {alpha = "abc"}\n')
    assert one_line_error("score", "--config", str(config)) == (
        "Error: invalid configuration: model.params.alpha: invalid value for mnb parameter "
        "'alpha': 'abc' (must be a number > 0)"
    )


def test_export_and_import_files(db: str, tmp_path: Path) -> None:
    assert "nonexistent.gz: No such file or directory" in one_line_error(
        "model", "import", str(tmp_path / "nonexistent.gz"), "--db", db
    )
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    assert "not a filterd model export" in one_line_error("model", "import", str(text), "--db", db)
    for content in (
        b"42\n",
        b'{"format": "filterd-model/1"}\n',
        b"\xff\xfe\x00",
        b"\x1f\x8b\x08junk",
    ):
        text.write_bytes(content)
        assert str(text) in one_line_error("model", "import", str(text), "--db", db)
    assert "/proc/nope/x.gz: No such file or directory" in one_line_error(
        "model", "export", "-o", "/proc/nope/x.gz", "--db", db
    )
    unknown = tmp_path / "unknown.jsonl.gz"
    assert "no model named 'nope'" in one_line_error(
        "model", "export", "-o", str(unknown), "--model", "nope", "--db", db
    )
    assert not unknown.exists()  # no partial export left behind


def test_database_urls_and_migrations(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert "No such file or directory" in one_line_error(
        "db", "upgrade", "--db", "sqlite:////proc/nope/x.db"
    )
    assert "'9999'" in one_line_error("db", "upgrade", "9999", "--db", db)
    for url in ("mysql://u@h/x", "foo://"):
        line = one_line_error("db", "upgrade", "--db", url)
        assert "sqlite" in line and "postgresql" in line, line  # the schemes filterd supports
    line = one_line_error("model", "show", "default", env={"FILTERD_DATABASE_URL": "foo://"})
    assert "sqlite" in line and "postgresql" in line
    # psycopg missing: the import fails as it would in an installation without it
    monkeypatch.setitem(sys.modules, "psycopg", None)
    for command in (("db", "upgrade"), ("model", "stats")):
        line = one_line_error(*command, "--db", "postgresql://u@localhost/x")
        assert "pip install 'filterd[postgres]'" in line, line


def test_model_show_and_delete(db: str) -> None:
    assert "no model named 'nope'" in one_line_error("model", "show", "nope", "--db", db)
    assert "no model named 'nope'" in one_line_error("model", "delete", "nope", "--yes", "--db", db)
    assert "add --yes" in one_line_error("model", "delete", "default", "--db", db)
