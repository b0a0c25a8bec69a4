"""Messages → tokens for the naive-Bayes core: pure, deterministic, bounded, never raising.
`Tokenizer(TokenizerConfig(...))` turns a message record into `Tokens` (the tokens, and the
flags of the limits they hit); `tokenize(message)` is the one-call form. The
token forms, module by module, are listed in `filterd.tokenize.tokenizer`. These names are
re-exported here, the one place other packages import them from: the modules behind them load
nothing but the standard library and the optional C loops."""

from filterd.tokenize.limits import TokenizerConfig
from filterd.tokenize.tokenizer import Tokenizer, Tokens, tokenize

__all__ = ["Tokenizer", "TokenizerConfig", "Tokens", "tokenize"]
