"""The optional C loops of filterd (filterd/_speedups.c: features.encode's token counting and
tokenize.text's word scan); everything else is in pyproject.toml.

`optional=True`: where it cannot be compiled (no C compiler or no Python headers), filterd
installs without it and runs the pure-Python references, with the same results.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("filterd._speedups", ["filterd/_speedups.c"], optional=True)])
