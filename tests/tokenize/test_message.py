"""Message records: subject, sender, attributes, odd field types, and the never-raise contract."""

import math
from typing import Any

import pytest

from filterd.tokenize import Tokenizer, TokenizerConfig, Tokens, tokenize
from filterd.tokenize.limits import NumberBins


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
        "amount~2^7.5",  # 2^7.5 ≈ 181 ≤ 250.5 < 256
        "n=-3",
        "n~-2^1.5",
        "z=0",
        "z~0",
    ]


def test_numbers_are_binned_on_a_log_scale_as_configured_per_key() -> None:
    numbers = NumberBins(per_doubling=1, per_doubling_of=(("amount", 4), ("age", 0)))
    config = TokenizerConfig(numbers=numbers)
    tokens = tokenize({"attributes": {"amount": 57.16, "fee": 3, "age": 40}}, config).tokens
    # 57.16 = 2^5.837: the bin from 2^5.75 in quarters; 3 = 2^1.58: from 2^1 in wholes
    assert tokens == ["amount=57.16", "amount~2^5.75", "fee=3", "fee~2^1", "age=40"]
    # one bin per factor of 2^(1/steps): neighbours within a bin share its token
    for steps in (1, 2, 3, 8):
        for x in (0.01, 1.0, 57.16, 1e9):
            low = NumberBins(steps)
            same = tokenize({"attributes": {"x": x}}, TokenizerConfig(numbers=low)).tokens[1]
            just_above = tokenize({"attributes": {"x": x * 1.0001}}, TokenizerConfig(numbers=low))
            far_above = tokenize({"attributes": {"x": x * 2.0}}, TokenizerConfig(numbers=low))
            assert far_above.tokens[1] != same
            assert just_above.tokens[1] == same or float(same.split("^")[1]) + 1 / steps == float(
                just_above.tokens[1].split("^")[1]
            )
    with pytest.raises(ValueError, match="bins per doubling of 'amount' must be an int"):
        NumberBins(per_doubling_of=(("amount", -1),))


def test_attributes_nested_values_are_flattened() -> None:
    attributes = {"geo": {"City": "New  York", "ll": [1.5, 2]}, "tags": ["a", "B"], "s": {"y", "x"}}
    assert tokenize({"attributes": attributes}).tokens == [
        "geo.city=new_york",
        "geo.ll=1.5",
        "geo.ll~2^0.5",
        "geo.ll=2",
        "geo.ll~2^1",
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
    result = tokenize({"attributes": attributes}, TokenizerConfig(numbers=NumberBins(decade=True)))
    assert result.tokens[:7] == [
        "big=bigint",
        "big~1e5000",
        "big~2^16609.5",
        "nan=nan",
        "inf=-inf",
        "bytes=café",
        "obj=<class_'object'>",
    ]
    assert result.tokens[7:10] == ["long=skip:v:100", "=empty_key", "ctl=a_b_c"]
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
