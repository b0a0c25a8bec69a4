"""Messages → tokens for the naive-Bayes core: pure, deterministic, bounded, never raising.

    from filterd.tokenize import Tokenizer, TokenizerConfig

    tokenizer = Tokenizer(TokenizerConfig(max_tokens=5_000))
    result = tokenizer({"id": "1", "text": "WIN £1000 now!! http://win.example.com/claim"})
    result.tokens   # ['win', '£1000', 'now', '!!', 'proto:http', 'url:win.example.com', …]

Token forms, by module:

    text.py        words, numbers, "$100", "50%", "!!", emoji; skip:<c>:<len> for long words;
                   optional word pairs "w1 w2" (bigrams, osb) and "w1 ~w3" "w1 ~~w4"
                   "w1 ~~~w5" (osb); optional c4:<abcd> character 4-grams (char_ngrams)
    links.py       proto:http  url:<host>  url:<parent domain>  url:ip  urlport:<n>
                   urlpath:<word>  email:<local>  email:<domain>
    addresses.py   from:<domain>  from:local:<local>  from:name:<word>  from:id:<id>  to:<domain>
    mail.py        subject:<token>  content-type:<type>  charset:<cs>  attach:<type>
                   attachsize:<class>  attachext:<ext>  header:<name>  (+ body tokens)
    attributes.py  key=value  key.sub=value  key~1e2

Limits (TokenizerConfig) and the flags reporting them are in config.py and limits.py.
"""

from filterd.tokenize.limits import TokenizerConfig
from filterd.tokenize.tokenizer import Tokenizer, Tokens, tokenize

__all__ = ["Tokenizer", "TokenizerConfig", "Tokens", "tokenize"]
