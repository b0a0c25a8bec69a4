"""The optional C accelerator of filterd.features.encode; everything else is in pyproject.toml.

`optional=True`: where it cannot be compiled (no C compiler), filterd installs without it and
encodes in pure Python, with the same results.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("filterd._speedups", ["filterd/_speedups.c"], optional=True)])
