"""Tokenizer options beyond words: orthogonal sparse bigrams (`osb`) and character 4-grams
(`char_ngrams`): their exact tokens, their bounds, linear cost, and defaults left unchanged."""

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from filterd.tokenize import Tokenizer, TokenizerConfig, tokenize
from filterd.tokenize import text as text_module
from filterd.tokenize.text import char_ngram_tokens, with_pairs

OSB = TokenizerConfig(osb=True)


def tokens(text: str, **config: Any) -> list[str]:  # TokenizerConfig's keywords, of any type
    return Tokenizer(TokenizerConfig(**config)).text(text)


def grams(text: str, chars: int = 3000) -> list[str]:
    return char_ngram_tokens((text,), chars)


# --- defaults ---------------------------------------------------------------------------------

SAMPLES: list[dict[str, Any]] = [
    {
        "id": "1",
        "text": "WIN £1000 now!! http://win.example.com/claim café ＦＲＥＥ",
        "subject": "Hi",
    },
    {
        "id": "2",
        "text": "Subject: s\nContent-Type: text/html\n\n<p>Buy <b>now</b></p>",
        "format": "email",
    },
    {"id": "3", "text": "a b c d e f g", "attributes": {"k": "v"}},
]


def test_options_are_off_by_default_and_leave_the_default_tokens_unchanged() -> None:
    config = TokenizerConfig()
    assert (config.osb, config.char_ngrams, config.char_ngram_chars, config.pairs) == (
        False,
        False,
        3000,
        0,
    )
    assert tokens("a b c") == ["a", "b", "c"]
    # the n-gram length alone changes nothing while char_ngrams is off
    for message in SAMPLES:
        assert tokenize(message, TokenizerConfig(char_ngram_chars=4)) == tokenize(message)
        assert not any(t.startswith("c4:") or " " in t for t in tokenize(message).tokens)


def test_pairs_of_one_are_the_bigrams() -> None:
    words = ["free", "cash", "!", "now", "skip:z:50", "me", "too"]
    assert with_pairs(words, 1) == [
        "free",
        "cash",
        "free cash",
        "!",
        "now",
        "skip:z:50",
        "me",
        "too",
        "me too",
    ]
    assert TokenizerConfig(bigrams=True).pairs == 1
    assert TokenizerConfig(osb=True).pairs == TokenizerConfig(osb=True, bigrams=True).pairs == 4


# --- orthogonal sparse bigrams ----------------------------------------------------------------


def test_osb_pairs_each_word_with_the_four_before_it_nearest_first() -> None:
    assert tokens("a1 b1 c1 d1 e1 f1", osb=True) == [
        "a1",
        "b1",
        "a1 b1",
        "c1",
        "b1 c1",
        "a1 ~c1",
        "d1",
        "c1 d1",
        "b1 ~d1",
        "a1 ~~d1",
        "e1",
        "d1 e1",
        "c1 ~e1",
        "b1 ~~e1",
        "a1 ~~~e1",
        "f1",
        "e1 f1",
        "d1 ~f1",
        "c1 ~~f1",
        "b1 ~~~f1",
    ]


def test_osb_includes_the_bigrams() -> None:
    text = "Win cash now, click here"
    pairs = [t for t in tokens(text, osb=True) if " " in t and "~" not in t]
    assert pairs == [t for t in tokens(text, bigrams=True) if " " in t]
    assert tokens(text, osb=True) == tokens(text, osb=True, bigrams=True)


def test_osb_does_not_cross_links_exclamations_emoji_or_skip_markers() -> None:
    text = "win big cash! now go http://x.com see it 🔥 to me " + "z" * 50 + " you"
    assert tokens(text, osb=True) == [
        "win",
        "big",
        "win big",
        "cash",
        "big cash",
        "win ~cash",
        "!",
        "now",
        "go",
        "now go",
        "proto:http",
        "url:x.com",
        "url:com",
        "see",
        "it",
        "see it",
        "🔥",
        "to",
        "me",
        "to me",
        "skip:z:50",
        "you",
    ]


def test_osb_reads_mail_body_text_but_not_headers() -> None:
    raw = "Subject: cheap pills now\nContent-Type: text/html\n\n<p>Buy <b>NOW</b> cheap</p>"
    assert tokenize({"text": raw, "format": "email"}, OSB).tokens == [
        "subject:cheap",
        "subject:pills",
        "subject:now",
        "content-type:text/html",
        "buy",
        "now",
        "buy now",
        "cheap",
        "now cheap",
        "buy ~cheap",
        "header:subject",
        "header:content-type",
        *["cheap", "pills", "now"],  # a short body: the subject's words as words, not paired
    ]


def test_osb_adds_at_most_four_tokens_per_word_and_scales_linearly() -> None:
    """n words in one run give n + (n−1) + (n−2) + (n−3) + (n−4) = 5n − 10 tokens: the count
    on ten times the input is ten times the count, less the constant."""
    for n in (10, 100, 1000):
        text = " ".join(f"w{i}" for i in range(n))
        assert len(tokens(text, osb=True, max_tokens=10**6)) == 5 * n - 10
    assert len(with_pairs(["w"] * 3, 4)) == 3 + 2 + 1


def test_osb_stops_pairing_past_max_tokens() -> None:
    """A long text is paired only as far as max_tokens keeps: the list is cut where the words
    alone would be, not built whole (about 5 tokens per word) and then cut."""
    text = "word " * 100_000
    # 50 tokens, and at most the 4 first words' 10 tokens and one word's 5 more
    assert 50 < len(text_module.text_tokens(text, 40, 4, 50)) <= 50 + 15
    assert tokens(text, osb=True, max_tokens=50) == tokens(text, osb=True, max_tokens=10**6)[:50]


# --- character 4-grams ------------------------------------------------------------------------


def test_char_ngrams_are_the_distinct_4_grams_of_the_first_n_characters() -> None:
    # "free_cash!_now" cut to 12 characters: 12 − 3 grams
    assert tokens("Free  cash! now", char_ngrams=True, char_ngram_chars=12) == [
        "free",
        "cash",
        "!",
        "now",
        "c4:free",
        "c4:ree_",
        "c4:ee_c",
        "c4:e_ca",
        "c4:_cas",
        "c4:cash",
        "c4:ash!",
        "c4:sh!_",
        "c4:h!_n",
    ]
    # each distinct gram once, in order of first appearance
    assert grams("aaaa aaaa") == ["c4:aaaa", "c4:aaa_", "c4:aa_a", "c4:a_aa", "c4:_aaa"]
    assert grams("abc") == grams("") == grams(" \n ") == []
    assert grams("abcd", 4) == ["c4:abcd"]


def test_char_ngrams_read_normalized_text_with_breaks_as_one_underscore() -> None:
    # white space, control characters and lone surrogates: one "_"; none leads or trails
    assert grams("  \t\nab\x00\ud800cd\r\n ") == ["c4:ab_c", "c4:b_cd"]
    assert grams("ＦＲＥＥ") == grams("FREE") == grams("fr\u200bee") == ["c4:free"]
    assert grams("你好世界") == ["c4:你好世界"]  # Han and kana are not spaced apart here
    assert grams("\ufdfa", 6) == ["c4:صلى_", "c4:لى_ا", "c4:ى_ال"]  # NFKC brings spaces
    assert grams("ab\u2028cd") == ["c4:ab_c", "c4:b_cd"]


def test_char_ngrams_read_subject_and_body_text_of_mail_and_come_after_its_tokens() -> None:
    raw = (
        "Subject: offer\nFrom: a@b.com\n"
        'Content-Type: multipart/mixed; boundary="b"\n\n'
        "--b\nContent-Type: text/plain\n\nHi  Bo\n"
        "--b\nContent-Type: text/html\n\n<p>Buy <b>it</b></p>\n"
        "--b\nContent-Type: application/pdf\nContent-Disposition: attachment\n\nJVBERi0x\n"
        "--b--\n"
    )
    config = TokenizerConfig(char_ngrams=True)
    result = tokenize({"text": raw, "format": "email", "attributes": {"k": "v"}}, config)
    plain = tokenize({"text": raw, "format": "email", "attributes": {"k": "v"}})
    grams_ = [t for t in result.tokens if t.startswith("c4:")]
    # the decoded Subject and the parts' text, one "_" between them; no other header, markup
    # or attachment
    assert grams_ == grams("offer hi bo buy it")
    assert result.tokens == plain.tokens[:-1] + grams_ + ["k=v"]


def test_char_ngrams_read_the_subject_field_first() -> None:
    config = TokenizerConfig(char_ngrams=True, char_ngram_chars=8)
    result = tokenize({"text": "cash now", "subject": "WIN", "sender": "a@b.c"}, config)
    assert result.tokens == [
        "subject:win",
        "from:b.c",
        "from:local:a",
        "cash",
        "now",
        "win",  # a short body: the subject's words as words too
        *["c4:win_", "c4:in_c", "c4:n_ca", "c4:_cas", "c4:cash"],
    ]
    # an empty subject adds no "_"
    assert tokenize({"text": "cash now", "subject": ""}, config).tokens[2:] == grams("cash now", 8)


def test_text_path_matches_message_path_with_both_options() -> None:
    tokenizer = Tokenizer(TokenizerConfig(osb=True, char_ngrams=True, char_ngram_chars=40))
    text = "Urgent: verify your account at http://bank.example.com today!"
    assert tokenizer({"id": 1, "text": text}).tokens == tokenizer.text(text)
    assert tokenizer({"id": 1, "text": text, "format": "odd"}).tokens == tokenizer.text(text)


def test_char_ngrams_read_only_a_prefix_of_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan is counted, not timed: the characters read are those of a few prefixes of
    the text up to what fills the first N characters, whatever follows (1,000 words or
    1,000,000); a run of white space before them is read in prefixes that double, in all
    less than three times its length."""
    read: list[int] = []
    original = text_module._joined_runs

    def counting(text: str, separator: str) -> str:
        read.append(len(text))
        return original(text, separator)

    monkeypatch.setattr(text_module, "_joined_runs", counting)
    for words in (1_000, 1_000_000):
        read.clear()
        # "abcd", "bcd_", "cd_a", "d_ab", "_abc"
        assert len(grams("abcd " * words, 100)) == 5
        assert sum(read) <= 4 * 101 + 100  # prefixes of 101 and 202, then the normalized 100
    for spaces in (1_000, 1_000_000):
        read.clear()
        assert grams(" " * spaces + "abcd efgh", 100) == grams("abcd efgh")
        assert sum(read) <= 3 * (spaces + 9) + 100


def reference_grams(texts: list[str], chars: int) -> list[str]:
    """The definition, reading all of `texts`: runs between breaks, normalized, cut, 4-grams."""
    runs = [run for text in texts for run in text_module._GRAM_RUN.findall(text)]
    normalized = text_module.normalize(" ".join(runs), spaced=False)
    text = "_".join(text_module._GRAM_RUN.findall(normalized))[:chars]
    return ["c4:" + g for g in dict.fromkeys(text[i : i + 4] for i in range(len(text) - 3))]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text("ab c\t\n\x00\x1f\x7f\x85\u2028\u3000\ud800_éĀ", max_size=40), max_size=4),
    st.integers(4, 50),
)
def test_char_ngrams_read_as_far_as_needed_give_the_grams_of_the_whole(
    texts: list[str], chars: int
) -> None:
    """Reading only the first runs (or all at once when they fit) gives what the definition
    gives on all of the text, for text whose normalization keeps its length."""
    assert char_ngram_tokens(texts, chars) == reference_grams(texts, chars)


# --- limits -----------------------------------------------------------------------------------

TEXT = st.text(st.characters(exclude_categories=()))


@settings(max_examples=300, deadline=None)
@given(TEXT, st.integers(4, 64))
def test_char_ngrams_are_bounded_by_their_characters(text: str, chars: int) -> None:
    out = grams(text, chars)
    assert len(out) <= chars - 3
    assert len(out) == len(set(out))
    for token in out:
        gram = token.removeprefix("c4:")
        assert len(gram) == 4 and token.startswith("c4:")
        assert not any(c.isspace() or c == "\x00" or "\ud800" <= c <= "\udfff" for c in gram)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "word ",
                "a@b.com ",
                "http://x.com/p ",
                "!! ",
                "\n",
                "\n\n",
                "Subject: s\n",
                "Content-Type: multipart/mixed; boundary=b\n",
                "--b\n",
                "--b--\n",
                "Content-Type: text/html\n",
                "<b>z</b> ",
                "From: me@x.com\n",
                "zz" * 30,
                "日本",
            ]
        ),
        max_size=60,
    ).map("".join),
    st.sampled_from(["email", "text"]),
    st.integers(1, 40),
    st.sampled_from([(True, False), (False, True), (True, True)]),
    st.integers(4, 30),
)
def test_max_tokens_keeps_the_first_tokens_of_the_whole_list(
    text: str, format_: str, limit: int, options: tuple[bool, bool], chars: int
) -> None:
    osb, char_ngrams = options
    config: dict[str, Any] = {"osb": osb, "char_ngrams": char_ngrams, "char_ngram_chars": chars}
    message = {"text": text, "format": format_, "attributes": {"k": 1}}
    whole = Tokenizer(TokenizerConfig(max_tokens=1_000_000, **config))(message)
    cut = Tokenizer(TokenizerConfig(max_tokens=limit, **config))(message)
    assert cut.tokens == whole.tokens[:limit]
    over = len(whole.tokens) > limit
    assert cut.flags == whole.flags | ({"max_tokens"} if over else set())
    assert len(cut.tokens) <= limit
    assert sum(t.startswith("c4:") for t in whole.tokens) <= chars - 3
    full, short = (
        Tokenizer(TokenizerConfig(**config)),
        Tokenizer(TokenizerConfig(max_tokens=limit, **config)),
    )
    assert short.text(text) == full.text(text)[:limit]


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"osb": 1}, "TokenizerConfig.osb must be a bool, got 1"),
        ({"char_ngrams": "yes"}, "TokenizerConfig.char_ngrams must be a bool, got 'yes'"),
        ({"char_ngram_chars": 3}, "TokenizerConfig.char_ngram_chars must be an int >= 4"),
        (
            {"char_ngram_chars": 3000.0},
            "char_ngram_chars must be an int >= 4 (one 4-gram), got 3000.0",
        ),
        ({"char_ngram_chars": True}, "char_ngram_chars must be an int >= 4"),
    ],
)
def test_config_rejects_nonsense(bad: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        TokenizerConfig(**bad)


HOSTILE = {
    "many words": "word " * 200_000,
    "one long word": "a" * 1_000_000,
    "white space then text": " " * 1_000_000 + "spam",
    "control characters": "\x00\x01" * 500_000,
    "nfkc expanding": "\ufdfa" * 300_000,
    "han": "你好" * 300_000,
    "bangs between words": "a ! " * 250_000,
}
HOSTILE_MAIL = {
    "many text parts": 'Content-Type: multipart/mixed; boundary="b"\n\n' + "--b\n\nx y z\n" * 900,
    "html words": "Content-Type: text/html\n\n" + "<b>w</b> " * 100_000,
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_text_completes_within_the_bounds(text: str) -> None:
    config = TokenizerConfig(osb=True, char_ngrams=True)
    result = tokenize({"text": text}, config)
    assert len(result.tokens) <= config.max_tokens
    assert sum(t.startswith("c4:") for t in result.tokens) <= config.char_ngram_chars - 3
    assert all(result.tokens) and "internal_error" not in result.flags


@pytest.mark.parametrize("raw", HOSTILE_MAIL.values(), ids=HOSTILE_MAIL.keys())
def test_hostile_mail_completes_within_the_bounds(raw: str) -> None:
    config = TokenizerConfig(osb=True, char_ngrams=True, char_ngram_chars=100)
    result = tokenize({"text": raw, "format": "email"}, config)
    assert len(result.tokens) <= config.max_tokens
    assert "internal_error" not in result.flags


def reference_pairs(tokens: list[str], pairs: int) -> list[str]:
    """with_pairs written plainly: each plain word, then its pair with each of the up to
    `pairs` plain words before it in its run, nearest first."""
    out: list[str] = []
    run: list[str] = []
    for token in tokens:
        plain = ":" not in token and (token[0].isalnum() or token[0] in text_module._PAIRABLE_START)
        if not plain:
            out.append(token)
            run = []
            continue
        out.append(token)
        for d, before in enumerate(reversed(run[-pairs:]), start=1):
            out.append(f"{before} {'~' * (d - 1)}{token}")
        run.append(token)
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "bb", "c3", "_x", "!!", "skip:w:40", "€5", "d"]), max_size=40),
    st.sampled_from([1, 4]),
)
def test_with_pairs_agrees_with_the_plain_reference(tokens: list[str], pairs: int) -> None:
    assert with_pairs(tokens, pairs) == reference_pairs(tokens, pairs)


@pytest.mark.skipif(
    text_module.c_pairs is None, reason="filterd._speedups not built (no C compiler)"
)
@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["a", "bb", "c3", "_x", "!!", "skip:w:40", "€5", "d", "é", "\U0001f600"])
        | st.text(min_size=1, max_size=3),
        max_size=40,
    ),
    st.integers(1, 15),
    st.integers(0, 200),
)
def test_the_c_pairs_are_the_reference_pairs(tokens: list[str], pairs: int, enough: int) -> None:
    assert text_module.c_pairs is not None
    expected = text_module.python_with_pairs(tokens, pairs, enough)
    assert text_module.c_pairs(tokens, pairs, enough) == expected
    assert with_pairs(tokens, pairs, enough) == expected
