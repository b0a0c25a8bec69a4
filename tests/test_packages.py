"""Every package of filterd says what it offers: a one-paragraph docstring, and `__all__` naming
its public API, each name of which a star import gives."""

import importlib
import pkgutil

import pytest

import filterd

DATA = ("filterd.migrations", "filterd.examples")  # shipped in a wheel: files, not an API
PACKAGES = ["filterd"] + [
    info.name
    for info in pkgutil.walk_packages(filterd.__path__, prefix="filterd.")
    if info.ispkg and not info.name.startswith(DATA)
]


def test_the_packages_are_found() -> None:
    assert len(PACKAGES) >= 13 and {"filterd", "filterd.bayes", "filterd.web"} <= set(PACKAGES)


@pytest.mark.parametrize("name", PACKAGES)
def test_a_package_has_a_one_paragraph_docstring_and_all(name: str) -> None:
    package = importlib.import_module(name)
    doc = (package.__doc__ or "").strip()
    assert doc and "\n\n" not in doc, name
    assert isinstance(package.__dict__.get("__all__"), list) and package.__all__, name
    namespace: dict[str, object] = {}
    exec(f"from {name} import *", namespace)
    assert [n for n in package.__all__ if n not in namespace] == [], name
