"""`.ci/run` runs exactly the test command that README.md gives."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    given = [line.strip() for line in readme if line.startswith("    ") and "pytest" in line]
    assert len(given) == 1, given  # one test command, in an indented code line
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert given[0] in [line.strip() for line in ci], given[0]
    assert [line for line in ci if line.strip()][-1] == given[0]  # the last thing it runs
