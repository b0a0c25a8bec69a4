"""A message written in its subject line: with `TokenizerConfig.short_body` = n, a body of
fewer than n plain words gets the subject's words as words too."""

import time
from typing import Any

import pytest

from filterd.tokenize import TokenizerConfig, tokenize

ON = TokenizerConfig(short_body=10)


def mail(subject: str, body: str) -> dict[str, str]:
    return {"text": f"Subject: {subject}\nFrom: a@example.com\n\n{body}", "format": "email"}


def test_a_mail_without_a_body_is_read_from_its_subject() -> None:
    tokens = tokenize(mail("same story different spin", ""), ON).tokens
    assert tokens[-4:] == ["same", "story", "different", "spin"]
    assert "subject:spin" in tokens  # the subject's own tokens stay


def test_a_body_of_enough_words_keeps_its_subject_to_itself() -> None:
    body = "one two three four five six seven eight nine ten"
    tokens = tokenize(mail("win cash", body), ON).tokens
    assert "win" not in tokens and "subject:win" in tokens
    shorter = tokenize(mail("win cash", body.rsplit(" ", 1)[0]), ON).tokens  # nine words
    assert shorter[-2:] == ["win", "cash"]


def test_the_subject_field_counts_too_and_headers_are_not_words() -> None:
    tokens = tokenize({"text": "hi there", "subject": "claim your prize"}, ON).tokens
    assert tokens[-3:] == ["claim", "your", "prize"]
    # header tokens (prefixed) do not make a body: a mail with many headers and no text
    many_headers = mail("lunch", "").copy()
    many_headers["text"] = "X-Mailer: a b c d e f g h i j k l\n" + many_headers["text"]
    assert tokenize(many_headers, ON).tokens[-1] == "lunch"


def test_on_by_default_off_by_setting_zero_and_checked() -> None:
    assert "spin" in tokenize(mail("spin", "")).tokens
    assert "spin" not in tokenize(mail("spin", ""), TokenizerConfig(short_body=0)).tokens
    bad: Any  # as a configuration file may give it
    for bad in (-1, 2.0, True):
        with pytest.raises(ValueError, match="short_body must be an int >= 0"):
            TokenizerConfig(short_body=bad)


def test_a_huge_subject_over_an_empty_body_stays_within_max_tokens_and_linear() -> None:
    config = TokenizerConfig(short_body=10, max_tokens=10_000)
    started = time.process_time()
    result = tokenize(mail("wa " * 300_000, ""), config)
    assert len(result.tokens) == 10_000 and "max_tokens" in result.flags
    assert time.process_time() - started < 5.0
