"""The evasion attacks of bench/evasion.py, and the ones the tokenizer already undoes."""

import pytest

from filterd.bayes.features import encode
from filterd.bayes.model import ROBINSON_FISHER_SPEC
from filterd.bayes.statistics import Statistics
from filterd.evaluation.attacks import (
    ATTACKS,
    HIDINGS,
    as_sent,
    attacked,
    with_good_words,
    with_hidden_words,
)
from filterd.evaluation.corpus import Record
from filterd.evaluation.protocols import Corpus, split_model
from filterd.tokenize import Tokenizer, TokenizerConfig
from filterd.tokenize.text import INVISIBLE_TRICK

SPAM = "Free entry to win cash prizes, claim your reward now at 0800 123 456"
MAIL = (
    "From: a@example.com\nSubject: Cheap pills\nContent-Type: text/html\n\n"
    "<p style='color:red'>Buy cheap pills today</p>\n"
)
INVISIBLE = ("cgj", "tags", "zwsp", "variation")


def tokens(text: str, fmt: str = "text") -> list[str]:
    return Tokenizer(TokenizerConfig())({"text": text, "format": fmt}).tokens


@pytest.mark.parametrize("attack", INVISIBLE)
def test_words_joined_by_invisible_characters_read_as_written_with_the_trick(attack: str) -> None:
    text = attacked(SPAM, "text", ATTACKS[attack])
    assert text != SPAM and tokens(text) == [INVISIBLE_TRICK, *tokens(SPAM)]


@pytest.mark.parametrize("attack", INVISIBLE)
def test_an_attacked_mail_keeps_its_headers_and_tags(attack: str) -> None:
    text = attacked(MAIL, "email", ATTACKS[attack])
    assert "Subject: Cheap pills" in text and text != as_sent(MAIL)
    read = tokens(text, "email")
    assert read.count(INVISIBLE_TRICK) == 1
    assert [t for t in read if t != INVISIBLE_TRICK] == tokens(as_sent(MAIL), "email")


def test_a_multipart_mail_is_attacked_in_its_text_parts_alone() -> None:
    mail = (
        "Subject: x\nContent-Type: multipart/mixed; boundary=bound\n\n--bound\n"
        "Content-Type: text/plain\nContent-Transfer-Encoding: base64\n\nY2hlYXAgcGlsbHM=\n"
        "--bound\nContent-Type: application/pdf\n\nJVBERi0=\n--bound--\n"
    )
    text = attacked(mail, "email", ATTACKS["spaced"])
    assert "c h e a p" in text and "JVBERi0=" in text and "--bound--" in text
    assert "cheap" in tokens(as_sent(mail), "email") and "cheap" not in tokens(text, "email")


@pytest.mark.parametrize("attack", sorted(set(ATTACKS) - set(INVISIBLE)))
def test_the_visible_attacks_change_the_words(attack: str) -> None:
    # not undone yet: the bench measures what they cost
    assert tokens(attacked(SPAM, "text", ATTACKS[attack])) != tokens(SPAM)


def test_good_words_go_into_the_body() -> None:
    assert {"lunch", "mum"} <= set(
        tokens(with_good_words(MAIL, "email", ["lunch", "mum"]), "email")
    )
    assert with_good_words("win cash", "text", ["lunch", "mum"]) == "win cash lunch mum"


def test_invisible_attacks_leave_a_learned_model_s_scores_as_they_were() -> None:
    words = ["cash", "prize", "claim", "reward", "lunch", "meeting", "mum", "tonight", "home"]
    spam, ham = " ".join(words[:4]), " ".join(words[4:])
    records = [
        Record(f"m{i}", ("spam",) if i % 2 else ("ham",), spam if i % 2 else ham, "text", i, None)
        for i in range(60)
    ]
    corpus = Corpus.tokenize(records, Tokenizer(TokenizerConfig()))
    model, test = split_model(corpus, ROBINSON_FISHER_SPEC, "spam")
    tested = next(r for r in test if "spam" in r.labels)
    hasher = Statistics().hasher
    clean = model.score(corpus.batch_of([tested])).binary()[0]
    for attack in INVISIBLE:
        text = attacked(tested.text, "text", ATTACKS[attack])
        score = model.score(encode([tokens(text)], hasher)).binary()[0]
        assert score == pytest.approx(clean) and clean > 0


@pytest.mark.parametrize("hiding", sorted(HIDINGS))
def test_words_hidden_in_html_are_read_as_hidden(hiding: str) -> None:
    plain = "From: a@example.com\nSubject: pills\n\ncheap pills & more\n"
    read = tokens(with_hidden_words(plain, ["meeting", "agenda"], hiding), "email")
    made_html = tokens(as_sent(plain, html=True), "email")
    assert "content-type:text/html" in made_html and {"cheap", "pills", "more"} <= set(made_html)
    assert sorted(set(read) - set(made_html)) == ["hidden:agenda", "hidden:meeting", "trick:hidden"]
