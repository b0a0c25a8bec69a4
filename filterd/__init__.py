"""filterd: a streaming spam and fraud filter built on the naive-Bayes variants of its seed
papers. The package itself holds only the version; the filter is in its subpackages, from the
pure core (`bayes`, `tokenize`, `evaluation`) to the shells (`kafka`, `store`, `web`, `cli`...),
layered as docs/architecture.md describes."""

__all__ = ["__version__"]

__version__ = "0.1.0"
