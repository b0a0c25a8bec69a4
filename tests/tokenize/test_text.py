"""Plain-text tokens: words, normalization, money, links, long words, bigrams."""

import re
import sys
import time
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from filterd.tokenize import Tokenizer, TokenizerConfig, tokenize
from filterd.tokenize import links as links_module
from filterd.tokenize import text as text_module
from filterd.tokenize.links import FIND_LINKS, find_links, url_tokens


def tokens(text: str, **config: Any) -> list[str]:  # TokenizerConfig's keywords, of any type
    return Tokenizer(TokenizerConfig(**config)).text(text)


def test_words_are_casefolded_in_order_with_repeats() -> None:
    assert tokens("Hello hello WORLD Straße") == ["hello", "hello", "world", "strasse"]


def test_inner_apostrophes_and_hyphens_stay_in_the_word() -> None:
    assert tokens("Don't x-ray rock'n'roll 'quoted' dash- -dash") == [
        "don't",
        "x-ray",
        "rock'n'roll",
        "quoted",
        "dash",
        "dash",
    ]


def test_typographic_apostrophe_reads_as_ascii() -> None:
    assert tokens("don\u2019t") == ["don't"]


def test_nfkc_folds_fullwidth_and_ligatures() -> None:
    assert tokens("ＦＲＥＥ ﬁnance Ｗｉｎ！！") == ["free", "finance", "win", "!!"]


INVISIBLE = "trick:invisible"


def test_invisible_characters_do_not_split_words_and_leave_their_trick() -> None:
    assert tokens("fr\u200bee mo\u00adney") == [INVISIBLE, "free", "money"]


@pytest.mark.parametrize(
    "hidden",
    [
        "\u034f",  # combining grapheme joiner
        "\U000e0041\U000e0042",  # tag characters
        "\ufe0f",  # a variation selector
        "\U000e0100",  # an ideographic variation selector
        "\u2065\u206a",  # bidi and deprecated format controls
        "\u3164",  # a Hangul filler
        "\u180b",  # a Mongolian variation selector
        "\U0001d173",  # a musical format control
    ],
)
def test_every_default_ignorable_character_is_removed_inside_a_word(hidden: str) -> None:
    assert tokens(f"V{hidden}i{hidden}a{hidden}gra now") == [INVISIBLE, "viagra", "now"]


def test_invisible_characters_outside_words_leave_no_trick() -> None:
    # emoji sequences are written with joiners and selectors: no letters on either side
    family, heart = "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\u2764\ufe0f"
    assert tokens(f"call {family} {heart} \u200bnow\u200b") == [
        "call",
        "\U0001f468",
        "\U0001f469",
        "\U0001f467",
        "\u2764",
        "now",
    ]


def test_text_without_invisible_characters_keeps_its_tokens() -> None:
    assert tokens("Free entry in 2 a wkly comp, £5.99 ☺") == tokens(
        "free entry in 2 a wkly comp, £5.99 ☺"
    )
    assert INVISIBLE not in tokens("Ünïcödé wörds, ＦＵＬＬ width and 中文 text")


def test_the_trick_is_kept_when_tokens_are_capped() -> None:
    tokenizer = Tokenizer(TokenizerConfig(max_tokens=3))
    assert tokenizer({"text": "a\u034fb c d e f g"}).tokens[:1] == [INVISIBLE]


def test_single_characters_are_kept_and_punctuation_dropped() -> None:
    assert tokens("u r 2 good 4 me ; - ... ?? ()") == ["u", "r", "2", "good", "4", "me"]


def test_exclamation_runs_are_one_two_or_three() -> None:
    assert tokens("win! win!! win!!!!!!") == ["win", "!", "win", "!!", "win", "!!!"]


def test_money_and_percent_keep_their_sign() -> None:
    assert tokens("Only $100, £5.99 or 100€; 50% off, 3.14 and 1,000 and 100k $2.5m") == [
        "only",
        "$100",
        "£5.99",
        "or",
        "100€",
        "50%",
        "off",
        "3.14",
        "and",
        "1,000",
        "and",
        "100k",
        "$2.5m",
    ]


def test_sentence_punctuation_is_not_part_of_a_number() -> None:
    assert tokens("Call 0800-123-456 now. Costs 100.") == [
        "call",
        "0800-123-456",
        "now",
        "costs",
        "100",
    ]


def test_han_and_kana_are_one_token_per_character() -> None:
    assert tokens("免费 ゲーム win") == ["免", "费", "ゲ", "ー", "ム", "win"]


def test_emoji_are_tokens() -> None:
    assert tokens("hot🔥deal 💰") == ["hot", "🔥", "deal", "💰"]


def test_url_becomes_host_suffix_port_and_path_tokens() -> None:
    assert tokens("Go to HTTPS://Login.Example.com:8443/Secure/verify.php?acct=1.") == [
        "go",
        "to",
        "proto:https",
        "url:login.example.com",
        "url:example.com",
        "url:com",
        "urlport:8443",
        "urlpath:secure",
        "urlpath:verify",
        "urlpath:php",
        "urlpath:acct",
    ]


def test_www_url_without_scheme_and_trailing_punctuation() -> None:
    assert tokens("see www.win.co.uk!!") == [
        "see",
        "url:www.win.co.uk",
        "url:win.co.uk",
        "url:co.uk",
        "url:uk",
        "!!",
    ]


def test_url_with_ip_host_and_userinfo() -> None:
    assert tokens("http://user:pw@192.168.0.1/x") == ["proto:http", "url:192.168.0.1", "url:ip"]


def test_deep_host_gives_at_most_four_suffixes() -> None:
    found = tokens("http://a.b.c.d.e.f.example.com")
    assert found == [
        "proto:http",
        "url:a.b.c.d.e.f.example.com",
        "url:e.f.example.com",
        "url:f.example.com",
        "url:example.com",
        "url:com",
    ]


def test_email_address_becomes_local_and_domain() -> None:
    assert tokens("write John.Doe+x@Mail.Example.org today") == [
        "write",
        "email:john.doe+x",
        "email:mail.example.org",
        "today",
    ]


def test_long_token_becomes_skip_marker() -> None:
    assert tokens("a" * 45 + " ok " + "b" * 40) == ["skip:a:40", "ok", "b" * 40]
    assert tokens("x" * 12, max_token_length=10) == ["skip:x:10"]
    assert tokens("http://" + "h" * 60 + ".com/" + "p" * 99) == [
        "proto:http",
        "url:skip:h:60",
        "url:com",
        "urlpath:skip:p:90",
    ]


def test_bigrams_are_off_by_default_and_pair_adjacent_words() -> None:
    assert tokens("free cash now") == ["free", "cash", "now"]
    assert tokens("free cash now", bigrams=True) == [
        "free",
        "cash",
        "free cash",
        "now",
        "cash now",
    ]


def test_bigrams_do_not_cross_links_exclamations_or_skip_markers() -> None:
    text = "click here! now http://x.com see " + "z" * 50 + " me"
    assert tokens(text, bigrams=True) == [
        "click",
        "here",
        "click here",
        "!",
        "now",
        "proto:http",
        "url:x.com",
        "url:com",
        "see",
        "skip:z:50",
        "me",
    ]


def test_tokenize_is_deterministic() -> None:
    message = {"id": "1", "text": "WIN £1000 now!! http://win.example.com/claim café ＦＲＥＥ"}
    first = tokenize(message)
    assert all(tokenize(message) == first for _ in range(3))
    assert first.tokens[:4] == ["win", "£1000", "now", "!!"]
    assert first.truncated is False and first.flags == frozenset()


def test_text_path_matches_message_path() -> None:
    tokenizer = Tokenizer(TokenizerConfig(bigrams=True))
    text = "Urgent: verify your account at http://bank.example.com today!"
    assert tokenizer({"id": 1, "text": text}).tokens == tokenizer.text(text)


LINKY_TEXT = st.lists(
    st.sampled_from(
        [
            "a",
            "Z",
            "9",
            "_",
            ".",
            "+",
            "-",
            "@",
            "@@",
            " ",
            "\n",
            ":",
            "/",
            "'",
            "é",
            "ж",
            "x.com",
            "http://",
            "https://",
            "ftp://",
            "www.",
            "mailto:",
            "a@b.c",
            "\xa0",
        ]
    ),
    max_size=40,
).map("".join)


def spans(matches: Iterable[re.Match[str]]) -> list[tuple[tuple[int, int], str | None, str | None]]:
    return [(m.span(), m.group("url"), m.groupdict().get("local")) for m in matches]


@settings(max_examples=1000, deadline=None)
@given(st.one_of(LINKY_TEXT, st.text()))
def test_find_links_gives_the_matches_of_the_links_pattern(text: str) -> None:
    assert spans(find_links(text)) == spans(FIND_LINKS.finditer(text))


@pytest.mark.parametrize(
    "text", ["@www." * 50, "a@www.b@c.d www.e@f.g", "x@y.z@www.q", "@@www.a@b.c", "www.a@b.c@d.e"]
)
def test_find_links_agrees_where_addresses_and_urls_overlap(text: str) -> None:
    assert spans(find_links(text)) == spans(FIND_LINKS.finditer(text))


WORDY_TEXT = st.lists(
    st.sampled_from(
        [
            *list("aZ9_ .,'-%$£€!\n"),
            "1.5",
            "x-y",
            "don't",
            "50%",
            "$3",
            "ж",
            "🔥",
            "➀",
            "٣",
            "!!!!",
            "1,000.5",
            "€5",
        ]
    ),
    max_size=40,
).map("".join)


# The word patterns of text.py in plain form: its patterns, written for speed, must match as these.
PLAIN_TAIL = r"(?:[-'.,%{cur}](?:(?<=[-'])\w+|(?<=\d[.,])\d\w*|(?<=\d[%{cur}])))*"
PLAIN_WORD = r"\w+{tail}|[{cur}](?=\d)\w+{tail}|!{{1,3}}(?!!)"
PLAIN_ASCII_TOKEN = re.compile(
    PLAIN_WORD.format(tail=PLAIN_TAIL.format(cur=r"\$"), cur=r"\$"), re.ASCII
)
CURRENCY = "$£€¥₹₩₽¢"
PLAIN_TOKEN = re.compile(
    PLAIN_WORD.format(tail=PLAIN_TAIL.format(cur=CURRENCY), cur=CURRENCY)
    + r"|[\u2600-\u27bf\U0001F000-\U0001F3FA\U0001F400-\U0001FAFF]"
)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(WORDY_TEXT, st.text()))
def test_word_patterns_match_their_plain_form(text: str) -> None:
    assert text_module._ASCII_TOKEN.findall(text) == PLAIN_ASCII_TOKEN.findall(text)
    assert text_module._TOKEN.findall(text) == PLAIN_TOKEN.findall(text)


@pytest.mark.skipif(
    text_module.c_words is None, reason="filterd._speedups not built (no C compiler)"
)
@settings(max_examples=1000, deadline=None)
@given(
    st.one_of(WORDY_TEXT, st.text(st.characters(max_codepoint=127)), st.text()), st.integers(1, 12)
)
def test_the_c_scan_gives_the_regex_tokens(text: str, max_length: int) -> None:
    assert text_module.c_words is not None
    assert text_module.c_words(text, max_length) == text_module.regex_tokens(text, max_length)


# Mostly ASCII, as mail bodies: long ASCII runs (the C loop reads runs of fewer characters
# whole), with characters that compose with the ASCII before them, or decompose, or fold.
FOLDABLE_TEXT = st.lists(
    st.one_of(
        st.text(st.characters(max_codepoint=127), min_size=30, max_size=80),
        st.sampled_from(
            [
                "\u0301",
                "\u0338",
                "\u0327\u0301",
                "\ufb01",
                "\u212a",
                "\u00df",
                "\u0130",
                "\u1100\u1161",
                "\u00a0",
                "\ufdfa",
                "\uff21",
                "\u2460",
                "\u00e9",
                "e\u0301",
                "\U0001d400",
                "\u3099",
            ]
        ),
        st.text(min_size=1, max_size=4),
    ),
    max_size=12,
).map("".join)


@pytest.mark.skipif(
    text_module.c_folded is None, reason="filterd._speedups not built (no C compiler)"
)
@settings(max_examples=1000, deadline=None)
@given(st.one_of(FOLDABLE_TEXT, st.text()))
def test_the_c_fold_gives_the_reference_text(text: str) -> None:
    expected = text_module.nfkc_casefold(text)
    assert text_module.c_folded is not None
    assert text_module.c_folded(text, text_module.nfkc_casefold) == expected
    with pytest.MonkeyPatch.context() as m:
        normalized = text_module.normalize(text)
        m.setattr(text_module, "c_folded", None)
        assert text_module.normalize(text) == normalized


@pytest.mark.skipif(
    text_module.c_grams is None, reason="filterd._speedups not built (no C compiler)"
)
@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet="ab_é\U0001f600\x00", max_size=40) | st.text(), st.integers(1, 5))
def test_the_c_grams_are_the_reference_grams(text: str, n: int) -> None:
    assert text_module.c_grams is not None
    expected = text_module.python_grams(text, n, "c4:")
    assert text_module.c_grams(text, n, "c4:") == expected
    assert (
        len(set(expected))
        == len(expected)
        == len({text[i : i + n] for i in range(len(text) - n + 1)})
    )


def test_find_links_agrees_where_addresses_outrun_urls() -> None:
    # Each address ends before the URL after its "@" does: the URL is looked for again after
    # every address (bench/hostile.py's url_behind_addresses times it at full size).
    text = "q@b.cwww./" * 200
    assert spans(find_links(text)) == spans(FIND_LINKS.finditer(text))


@pytest.mark.skipif(
    text_module.c_linked_words is None, reason="filterd._speedups not built (no C compiler)"
)
@settings(max_examples=1000, deadline=None)
@given(
    st.one_of(LINKY_TEXT, WORDY_TEXT, st.text(st.characters(max_codepoint=127)), st.text()),
    st.integers(1, 12),
    st.one_of(st.integers(-1, 8), st.just(sys.maxsize)),
)
def test_the_c_link_scan_gives_the_reference_tokens(
    text: str, max_length: int, enough: int
) -> None:
    expected = text_module.linked_tokens(text, max_length, 0, enough)
    assert text_module.c_linked_words is not None
    assert text_module.c_linked_words(text, max_length, enough, url_tokens) == expected
    with pytest.MonkeyPatch.context() as m:  # the reference on the regex word scan alone
        m.setattr(text_module, "c_words", None)
        assert text_module.linked_tokens(text, max_length, 0, enough) == expected


@pytest.mark.skipif(
    text_module.c_linked_words is None, reason="filterd._speedups not built (no C compiler)"
)
@pytest.mark.parametrize(
    "text",
    [
        "q@b.cwww./" * 50,
        "@www." * 50,
        "a@www.b@c.d www.e@f.g",
        "www.a@b.c@d.e",
        "see (http://x.example.com/a?b=1).",
        "https:// http://. www.) ftp://x",
        "é@ж.com ＠ www.日本.jp/パス",
        "x" * 50 + "@" + "y" * 50 + ".com",
    ],
)
def test_the_c_link_scan_agrees_where_links_overlap(text: str) -> None:
    assert text_module.c_linked_words is not None
    for max_length in (3, 40):
        expected = text_module.linked_tokens(text, max_length)
        assert text_module.c_linked_words(text, max_length, sys.maxsize, url_tokens) == expected


URL_TEXT = st.lists(
    st.sampled_from(
        [
            *list("aZ9_.-:/?#@+% \n"),
            "http",
            "https://",
            "www.",
            "//",
            "mailto:",
            "a-b.c.d.e.f.g",
            "1.2.3.4",
            "1.2.3.45678",
            "123",
            "٣",
            "²",
            "é",
            ":8080",
            ":123456",
            "user:pw@",
            "x" * 45,
            "abcdefghijklmnop",
            "..",
        ]
    ),
    max_size=30,
).map("".join)


@pytest.mark.skipif(links_module.c_url_tokens is None, reason="filterd._speedups not built")
@settings(max_examples=1000, deadline=None)
@given(st.one_of(URL_TEXT, st.text()), st.integers(1, 50))
def test_the_c_url_reading_gives_the_regex_tokens(url: str, max_length: int) -> None:
    expected = links_module.python_url_tokens(url, max_length)
    assert links_module.c_url_tokens is not None
    assert links_module.c_url_tokens(url, max_length) == expected


LOOKALIKE = "trick:lookalike"


@pytest.mark.parametrize(
    "written",
    [
        "p\u0430yp\u0430l",  # Cyrillic а
        "\u0420ayPal",  # Cyrillic Р, capital
        "p\u03b1yp\u03b1l",  # Greek α
        "\u0440\u0430\u0443pal",  # three Cyrillic letters, then Latin
        "payp\u0430\u200bl",  # and an invisible character
    ],
)
def test_look_alike_letters_in_a_latin_word_read_as_latin_with_their_trick(written: str) -> None:
    read = tokens(f"log in to {written} now")
    assert [t for t in read if not t.startswith("trick:")] == ["log", "in", "to", "paypal", "now"]
    assert LOOKALIKE in read[:2]  # first, with the invisible characters' trick if any


@pytest.mark.parametrize(
    "text",
    [
        "\u043f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440",  # Russian, one script a word
        "\u03ba\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1",  # Greek
        "caf\u00e9 na\u00efve kap\u0131s\u0131 stra\u00dfe",  # Latin's own letters
        "iPhone \u0438 Android",  # words of either script beside each other
    ],
)
def test_words_of_one_script_stay_as_written(text: str) -> None:
    read = tokens(text)
    assert LOOKALIKE not in read
    assert read == Tokenizer(TokenizerConfig())({"text": text}).tokens
    assert "".join(read) == "".join(text_module.normalize(text).split())


def test_a_long_text_read_piece_by_piece_gives_its_tricks_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(text_module, "CHUNK", 16)
    text = "plain words here " * 4 + "p\u0430yp\u0430l fr\u200bee"
    read = text_module.text_tokens(text)
    assert read[:2] == [INVISIBLE, LOOKALIKE] and read[-2:] == ["paypal", "free"]


SPLIT = "trick:split"


@pytest.mark.parametrize(
    "written", ["v i a g r a", "V.I.A.G.R.A", "v-i-a-g-r-a", "v i\u200b a g r a"]
)
def test_a_word_written_a_letter_at_a_time_reads_joined_with_its_trick(written: str) -> None:
    read = tokens(f"buy {written} now")
    assert [t for t in read if not t.startswith("trick:")] == ["buy", "viagra", "now"]
    assert SPLIT in read[:2]


@pytest.mark.parametrize(
    "text",
    [
        "u r a star",  # three single letters: words of a chat
        "a.b.c.d.example.com",  # a host
        "see http://a.b.c.d.e/ or mail a.b.c.d@example.com",  # links
        "plan b-c-d-e3 x-ray",  # a letter beside a digit is no single letter
        "_a b c d",  # nor one beside "_"
    ],
)
def test_single_letters_that_are_no_split_word_stay_as_written(text: str) -> None:
    assert SPLIT not in tokens(text)
    assert text_module.unsplit(text_module.normalize(text)) == (text_module.normalize(text), False)


def test_a_long_split_run_reads_as_one_long_word_in_linear_time() -> None:
    started = time.process_time()
    read = text_module.text_tokens("a " * 500_000)
    assert read[0] == SPLIT and all(t.startswith("skip:a:") for t in read[1:])
    assert time.process_time() - started < 2.0


SPLIT_TEXT = st.text("ab .-_@/:é1\u00e0Z\u200b", max_size=60)


@pytest.mark.skipif(text_module.c_split_words is None, reason="filterd._speedups not built")
@settings(max_examples=2000, deadline=None)
@given(st.one_of(SPLIT_TEXT, st.text(st.characters(codec="utf-8"), max_size=60)))
def test_the_c_split_word_scan_gives_the_regex_runs(text: str) -> None:
    assert text_module.c_split_words is not None
    assert text_module.c_split_words(text) == text_module.python_split_words(text)
