"""Build settings pyproject.toml cannot state: the optional C loops of filterd
(filterd/_speedups.c: features.encode's token counting, and the tokenizer's scans of words,
links, URLs, Received headers and HTML), and the
top-level migrations/ shipped inside the package as `filterd.migrations`, so that an installed
filterd (not only a checkout) can create and upgrade its store, and the top-level config/ (the
example configuration and the operations pack) as `filterd.examples`, and the workbench's
templates and static files (htmx, the style sheet, the shortcuts) with `filterd.web`.

`optional=True`: where the C loops cannot be compiled (no C compiler or no Python headers),
filterd installs without them and runs the pure-Python references, with the same results.
"""

from setuptools import Extension, find_packages, setup

setup(
    packages=[
        *find_packages(include=["filterd", "filterd.*"]),
        "filterd.migrations",
        "filterd.examples",
    ],
    package_dir={"filterd.migrations": "migrations", "filterd.examples": "config"},
    package_data={
        "filterd.migrations": ["script.py.mako", "versions/*.py"],
        "filterd.examples": ["*.toml", "*.yaml", "systemd/*", "prometheus/*", "grafana/*"],
        "filterd.web": ["templates/*.html", "static/*"],
    },
    ext_modules=[Extension("filterd._speedups", ["filterd/_speedups.c"], optional=True)],
)
