"""filterd: a streaming spam and fraud filter built on the naive-Bayes variants of its seed
papers."""

__version__ = "0.1.0"
