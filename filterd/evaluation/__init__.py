"""Measuring models on labelled data: ranking measures, recall-targeted thresholds and their
guardrails, corpora, the split and online protocols, tuning and synthetic streams."""
