"""HTML → visible text and link targets: the C scan agrees with the regexes."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from filterd.tokenize import markup
from filterd.tokenize.markup import html_text, python_markup

MARKUP = st.lists(
    st.sampled_from(
        [
            *list("<>/!?az =\"' \n\t\xa0"),
            "<a ",
            "<b>",
            "</p>",
            "<!doctype html>",
            "href",
            "src",
            "action",
            "href=",
            'href="',
            "src='",
            "action = ",
            "http://x.example.com/",
            "&amp;",
            "&#65;",
            "é",
            "ж",
            "🔥",
        ]
    ),
    max_size=40,
).map("".join)


def test_tags_become_spaces_and_links_are_their_unescaped_targets() -> None:
    visible, links, _ = html_text(
        '<P>Hi <A HREF="http://x.example.com/?a=1&amp;b=2">there</a><img src=y.png></p>'
    )
    assert visible.split() == ["hi", "there"]
    assert links == ["http://x.example.com/?a=1&b=2", "y.png"]


@pytest.mark.skipif(markup.c_markup is None, reason="filterd._speedups not built")
@settings(max_examples=1000, deadline=None)
@given(st.one_of(MARKUP, st.text()))
def test_the_c_scan_gives_the_regex_text_and_links(text: str) -> None:
    assert markup.c_markup is not None
    assert markup.c_markup(text) == python_markup(text)


@pytest.mark.skipif(markup.c_markup is None, reason="filterd._speedups not built")
@pytest.mark.parametrize(
    "text",
    [
        'href="' + "x" * 100,
        "href='a<b' src = \"c>d\" action=e'f",
        "<a" * 50 + ">" + "<" * 50,
        "<b>é</b>",  # the text's kind narrows once the tag is gone
        "href=",
        "<",
    ],
)
def test_the_c_scan_agrees_on_unclosed_values_and_tags(text: str) -> None:
    assert markup.c_markup is not None
    visible, links = markup.c_markup(text)
    assert (visible, links) == python_markup(text)
    assert type(visible) is str and visible.isascii() == python_markup(text)[0].isascii()
