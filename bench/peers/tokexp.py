"""Attribution experiment: filterd's e-mail tokens plus bogofilter-like header tokens.

    .venv/bin/python bench/peers/tokexp.py --corpus spamassassin --extra received CANDIDATE ...

bogofilter (`bogolexer -p`) tokenizes every header: Received lines as `rcvd:` tokens (hosts,
IPs, words), the mbox envelope line and all other headers as `head:` tokens, and keeps case.
filterd's mail tokenizer (filterd/tokenize/mail.py, headers.py) reads Subject, From/Reply-To/
Return-Path, To/Cc, the relays of the Received headers (hosts and networks), a few client and
threading headers, the content types and the header names. This wraps filterd's Tokenizer and
adds, per --extra: `received` (rcvd:<word> of every word of every Received header), `envelope` (head:<token>
of the mbox "From " line), `headers` (head:<token> of every other header value not read by
filterd, except Date and Message-ID), `case` (the body's words once more, case kept, as
case:<Word>, for words with an upper-case letter). Measured with the code path of
`filterd evaluate`; nothing in filterd/ changes.
"""

from __future__ import annotations

import argparse
import email.parser
import email.policy
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from adapters import candidate  # noqa: E402

CORPORA = HERE.parents[2] / "shared" / "corpora"
_READ = {"subject", "from", "reply-to", "return-path", "to", "cc", "content-type", "content-transfer-encoding",
         "date", "message-id", "received"}  # fmt: skip
_WORD = re.compile(r"[^\W\d_][\w'-]*[^\W_]|[^\W\d_]")


class ExtraTokens:
    def __init__(self, base, extra: set[str]) -> None:
        self.base, self.extra = base, extra
        self.parser = email.parser.Parser(policy=email.policy.compat32)

    def __call__(self, message):
        from filterd.tokenize.mail import decode_header
        from filterd.tokenize.text import text_tokens
        from filterd.tokenize.tokenizer import Tokens

        tokens = self.base(message)
        if message.get("format") != "email":
            return tokens
        raw = message["text"]
        head = self.parser.parsestr(raw, headersonly=True)
        out = list(tokens.tokens)
        if "received" in self.extra:
            for value in head.get_all("received", ()):
                out += ["rcvd:" + t for t in text_tokens(str(value))]
        if "envelope" in self.extra and raw.startswith("From "):
            out += ["head:" + t for t in text_tokens(raw.split("\n", 1)[0][5:])]
        if "headers" in self.extra:
            for name, value in head.items():
                if name.lower() not in _READ:
                    out += ["head:" + t for t in text_tokens(decode_header(str(value)))]
        if "case" in self.extra:
            body = raw.split("\n\n", 1)[-1]
            out += ["case:" + w for w in _WORD.findall(body) if not w.islower()]
        return Tokens(out, tokens.truncated, tokens.flags)


def main() -> None:
    from filterd.corpus import read_corpus
    from filterd.evaluate import Corpus, evaluate
    from filterd.tokenize import Tokenizer
    from filterd.tokenize.config import TokenizerConfig

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("candidates", nargs="+")
    parser.add_argument("--corpus", action="append", required=True)
    parser.add_argument("--extra", default="", help="comma-separated: received,envelope,headers,case")
    parser.add_argument("--no-online", action="store_true")
    parser.add_argument("--bigrams", action="store_true", help="filterd's tokenizer with word bigrams")
    args = parser.parse_args()
    extra = {e for e in args.extra.split(",") if e}
    for name in args.corpus:
        corpus = Corpus.tokenize(read_corpus(CORPORA / name / "messages.jsonl.gz"), ExtraTokens(Tokenizer(TokenizerConfig(bigrams=args.bigrams)), extra))
        for text in args.candidates:
            spec = candidate(text).spec()
            split = evaluate(corpus, spec, "split")
            cells = f"split AUC {split.auc:.4f} spec@R=1 {split.spec_at_full_recall:.3f}"
            if split.accuracy is not None and split.task == "multiclass":
                cells += f" acc {split.accuracy:.4f}"
            if not args.no_online and split.task == "binary":
                online = evaluate(corpus, spec, "online")
                cells += f" | online (1−AUC)% {online.one_minus_auc_pct:.3f} spec@R=1 {online.spec_at_full_recall:.3f}"
            print(f"{name} extra={','.join(sorted(extra)) or '-'}{' bigrams' if args.bigrams else ''} {text}: {cells}", flush=True)


if __name__ == "__main__":
    main()
