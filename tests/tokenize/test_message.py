"""Message records: subject, sender, attributes, odd field types, and the never-raise contract."""

import math
from typing import Any

from filterd.tokenize import Tokenizer, TokenizerConfig, Tokens, tokenize


def test_fields_come_in_order_subject_sender_text_attributes() -> None:
    result = tokenize(
        {
            "id": "1",
            "subject": "Hi there",
            "sender": "Bank <alerts@bank.example>",
            "text": "pay now",
            "attributes": {"channel": "SMS"},
            "tenant": "t",
            "ts": 5,
        }
    )
    assert result.tokens == [
        "subject:hi",
        "subject:there",
        "from:bank.example",
        "from:local:alerts",
        "from:name:bank",
        "pay",
        "now",
        "hi",  # a body this short is read with its subject's words (TokenizerConfig.short_body)
        "there",
        "channel=sms",
    ]
    assert result == Tokens(result.tokens, False, frozenset())


def test_sender_without_address_is_an_id() -> None:
    assert tokenize({"sender": "+44 7700 900123"}).tokens == [
        "from:id:+447700900123",
        "from:name:44",
        "from:name:7700",
        "from:name:900123",
    ]


def test_attributes_scalars_use_json_spelling_and_numbers_add_magnitude() -> None:
    attributes = {
        "Country": "US",
        "ok": True,
        "no": False,
        "x": None,
        "amount": 250.5,
        "n": -3,
        "z": 0,
    }
    assert tokenize({"attributes": attributes}).tokens == [
        "country=us",
        "ok=true",
        "no=false",
        "x=null",
        "amount=250.5",
        "amount~1e2",
        "n=-3",
        "n~-1e0",
        "z=0",
        "z~0",
    ]


def test_attributes_nested_values_are_flattened() -> None:
    attributes = {"geo": {"City": "New  York", "ll": [1.5, 2]}, "tags": ["a", "B"], "s": {"y", "x"}}
    assert tokenize({"attributes": attributes}).tokens == [
        "geo.city=new_york",
        "geo.ll=1.5",
        "geo.ll~1e0",
        "geo.ll=2",
        "geo.ll~1e0",
        "tags=a",
        "tags=b",
        "s=x",
        "s=y",
    ]


def test_attribute_odd_values_do_not_raise() -> None:
    attributes = {
        "big": 10**5000,
        "nan": math.nan,
        "inf": -math.inf,
        "bytes": b"caf\xc3\xa9",
        "obj": object,
        "long": "v" * 100,
        "": "empty key",
        "ctl": "a\x00b\tc\ud800",
        "deep": [[[[[[[[[["x"]]]]]]]]]],
    }
    result = tokenize({"attributes": attributes})
    assert result.tokens[:6] == [
        "big=bigint",
        "big~1e5000",
        "nan=nan",
        "inf=-inf",
        "bytes=café",
        "obj=<class_'object'>",
    ]
    assert result.tokens[6:9] == ["long=skip:v:100", "=empty_key", "ctl=a_b_c"]
    assert "deep=nested" in result.tokens and "max_depth" in result.flags


def test_odd_field_types_are_coerced_or_ignored() -> None:
    assert tokenize({"text": None}).tokens == []
    assert tokenize({"text": b"bytes caf\xc3\xa9"}).tokens == ["bytes", "café"]
    assert tokenize({"text": 12345, "subject": 7}).tokens == ["subject:7", "12345", "7"]
    assert tokenize({"text": "x", "format": "EMAIL "}).tokens[0] == "content-type:text/plain"


def test_unknown_format_and_bad_attributes_are_flagged_not_fatal() -> None:
    result = tokenize({"text": "hello", "format": "fax", "attributes": ["not", "a", "dict"]})
    assert result.tokens == ["hello"]
    assert result.flags == {"unknown_format", "bad_attributes"} and not result.truncated


def test_a_message_that_is_not_a_mapping_gives_no_tokens() -> None:
    bad: Any  # any JSON value but an object
    for bad in (None, "text", 42, ["text"]):
        assert tokenize(bad) == Tokens([], False, frozenset({"bad_message"}))


def test_a_broken_mapping_yields_internal_error_instead_of_raising() -> None:
    class Broken(dict[str, object]):
        def get(self, key: str, default: object = None) -> object:
            raise RuntimeError("boom")

    assert Tokenizer()(Broken()) == Tokens([], True, frozenset({"internal_error"}))


def test_tokenizer_keeps_its_config() -> None:
    config = TokenizerConfig(max_tokens=7, bigrams=True)
    assert Tokenizer(config).config is config
    assert Tokenizer().config == TokenizerConfig()
