"""HTML text a reader does not see: told apart, and read as hidden:<token>."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from filterd.tokenize import Tokenizer, TokenizerConfig
from filterd.tokenize.hidden import MAX_DEPTH, c_hidden_spans, python_hidden_spans, split_hidden
from filterd.tokenize.markup import html_text


def hidden_of(markup: str) -> str:
    return split_hidden(markup.lower())[1]


@pytest.mark.parametrize(
    "opening",
    [
        '<div style="display:none">',
        "<div style='visibility: hidden'>",
        '<span style="opacity:0">',
        "<p hidden>",
        '<span style="font-size:0">',
        '<span style="font-size: 1px">',
        '<span style="font-size:0.1em">',
        '<div style="height:0;overflow:hidden">',
        '<div style="position:absolute; left:-9999px">',
        '<p style="text-indent:-5000px">',
        '<font color="#ffffff">',  # white on the page's white
        '<font color="#FEFEFE">',  # close to it
        '<span style="color: rgb(250, 250, 250)">',
        '<td bgcolor="#000000"><font color="black">',
        '<div style="background-color:#123456"><span style="color:#123457">',
    ],
)
def test_the_classic_tricks_hide_their_text(opening: str) -> None:
    closing = "".join(f"</{tag}>" for tag in reversed(_tags(opening)))
    markup = f"<p>Buy cheap pills</p>{opening}meeting lunch family{closing}<p>now</p>"
    visible, _, hidden = html_text(markup)
    assert hidden == "meeting lunch family"
    assert "meeting" not in visible and "buy cheap pills" in visible and "now" in visible


def _tags(opening: str) -> list[str]:
    return [part.split()[0].rstrip(">") for part in opening.split("<")[1:]]


@pytest.mark.parametrize(
    "opening",
    [
        '<font color="#ffffff" style="background:#000">',  # white on black
        '<td bgcolor="black"><font color="white">',
        '<td background="stars.jpg"><font color="#ffffff">',  # on an image: cannot tell
        '<div style="background: url(x.png)"><font color="#fff">',
        '<span style="font-size:12px">',
        '<div style="display:block;visibility:visible">',
        '<div style="overflow:hidden">',  # no size of zero
        '<td bgcolor="#000000">',  # the reader's default colour: the page may style it
    ],
)
def test_visible_text_stays_visible(opening: str) -> None:
    markup = f"{opening}meeting lunch</td></font></div></span>"
    assert hidden_of(markup) == ""


def test_what_follows_a_hidden_element_is_seen_and_its_tags_are_kept() -> None:
    markup = (
        '<a href="http://x.test/">go</a><div style="display:none"><b>ham <i>words</i></b></div>'
        "after"
    )
    visible, hidden = split_hidden(markup)
    assert hidden == "ham words" and visible.endswith("</div>after")
    assert len(visible) == len(markup) and '<a href="http://x.test/">' in visible


def test_an_unclosed_hidden_element_hides_to_the_end_and_stray_closings_are_ignored() -> None:
    assert hidden_of('a</span></div><div style="display:none">b</p>c') == "b c"


def test_inherited_colours_and_nested_hidden_elements() -> None:
    markup = (
        '<body bgcolor="#ffffff"><font color="#fffffe"><p>one</p><b>two</b></font>'
        "<div hidden><div hidden>three</div>four</div>five</body>"
    )
    assert hidden_of(markup) == "one two three four"


def test_an_element_deeper_than_the_limit_takes_the_deepest_s_place() -> None:
    deep = "<div>" * (MAX_DEPTH + 10)
    assert hidden_of(deep + '<span style="display:none">x</span>y') == "x"
    assert hidden_of('<div style="display:none">' + deep + "x") == "x"


def test_a_mail_reads_hidden_words_in_their_own_namespace() -> None:
    mail = (
        "From: a@example.com\nSubject: offer\nContent-Type: text/html\n\n"
        '<p>cheap pills</p><div style="display:none">meeting agenda</div>'
    )
    tokens = Tokenizer(TokenizerConfig())({"text": mail, "format": "email"}).tokens
    assert {"cheap", "pills", "trick:hidden", "hidden:meeting", "hidden:agenda"} <= set(tokens)
    assert "meeting" not in tokens and "agenda" not in tokens


# Fragments of markup, odd ones among them, for the C walk and its reference to meet
FRAGMENTS = st.sampled_from(
    [
        "<div>",
        "</div>",
        "<span ",
        "<p",
        ">",
        "</",
        "<",
        "/>",
        "<br>",
        "<font ",
        "</font>",
        ' style="',
        "style='",
        '"',
        "'",
        "=",
        " ",
        "\u2003",
        "\n",
        ";",
        ":",
        "-",
        "display:none",
        "display: none !important",
        "visibility:collapse",
        "opacity:.05",
        "opacity:0.5",
        "font-size:1px",
        "font-size: 2",
        "font-size:.1em",
        "font-size:15%",
        "font-size:3pt",
        "left:-999px",
        "top: -1e3px",
        "text-indent:-500",
        "overflow:hidden",
        "height:0",
        "max-height:-.0px",
        "width:0.0",
        "color:#fff",
        "color: #fefefe",
        "color:rgb(250, 250,250)",
        "color:rgba(1,2,3",
        "color:rgb(1234,1,1)",
        "color:white",
        "color:#ffff",
        "color:#fffé",
        "background:#000",
        "background-color:black",
        "background: url(x)",
        "color=#ffffff",
        "color=black",
        'color="#000000"',
        "text=white",
        "bgcolor=#000",
        "bgcolor=zz",
        "background=x.png",
        "hidden",
        "ahidden",
        "hidden=",
        "style",
        "9999",
        ".",
        "e",
        "words",
        "é",
        "ı",
        "\u00a0",
        "display",
        "none",
    ]
)
MARKUP = st.lists(FRAGMENTS, max_size=60).map("".join)


@pytest.mark.skipif(c_hidden_spans is None, reason="filterd._speedups not built")
@settings(max_examples=1500, deadline=None)
@given(MARKUP)
def test_the_c_walk_finds_the_spans_of_its_reference(markup: str) -> None:
    assert c_hidden_spans is not None
    assert c_hidden_spans(markup) == python_hidden_spans(markup)


@pytest.mark.skipif(c_hidden_spans is None, reason="filterd._speedups not built")
@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=200))
def test_the_c_walk_agrees_on_any_text(markup: str) -> None:
    assert c_hidden_spans is not None
    assert c_hidden_spans(markup) == python_hidden_spans(markup)


def test_the_c_walk_agrees_past_the_stack_s_depth() -> None:
    markup = '<div style="display:none">x' * (MAX_DEPTH + 5) + "</div>y" * (MAX_DEPTH + 7) + "z"
    if c_hidden_spans is not None:
        assert c_hidden_spans(markup) == python_hidden_spans(markup)
    spans = python_hidden_spans(markup)
    assert spans and spans[-1][1] < len(markup) - 1  # every element closed: "z" is seen
