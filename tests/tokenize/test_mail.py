"""Raw mail (format "email"): headers, MIME parts, encodings, HTML, attachments, broken mail."""

from email.message import EmailMessage
from email.mime.application import MIMEApplication
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText

from filterd.tokenize import TokenizerConfig, Tokens, tokenize
from filterd.tokenize.mail import MailFields


def mail(raw: str) -> Tokens:
    return tokenize({"id": "m", "text": raw, "format": "email"})


def test_headers_give_prefixed_tokens() -> None:
    m = EmailMessage()
    m["From"] = '"PayPal Security" <Service@PayPal.com.evil.ru>'
    m["Reply-To"] = "collect@drop.example"
    m["To"] = "Alice <alice@corp.example.com>, bob@home.example.net"
    m["Subject"] = "Verify your ACCOUNT now"
    m.set_content("Hello there\n")
    result = mail(m.as_string())
    assert result.tokens[:4] == ["subject:verify", "subject:your", "subject:account", "subject:now"]
    for token in [
        "from:paypal.com.evil.ru",
        "from:local:service",
        "from:name:paypal",
        "from:name:security",
        "reply-to:drop.example",
        "to:corp.example.com",
        "to:home.example.net",
        "content-type:text/plain",
        "hello",
        "there",
        "header:from",
        "header:subject",
    ]:
        assert token in result.tokens
    assert result.flags == frozenset()


def test_encoded_word_subject_is_decoded() -> None:
    raw = "Subject: =?utf-8?q?Caf=C3=A9_gratuit?= =?iso-8859-1?b?6XTp?=\n\nbody\n"
    assert mail(raw).tokens[:2] == ["subject:café", "subject:gratuitété"]


def test_multipart_alternative_reads_both_parts() -> None:
    m = EmailMessage()
    m["Subject"] = "offer"
    m.set_content("plain cheap pills\n")
    m.add_alternative("<html><body><p>html <b>cheap</b> meds</p></body></html>", subtype="html")
    tokens = mail(m.as_string()).tokens
    assert tokens.index("content-type:multipart/alternative") < tokens.index(
        "content-type:text/plain"
    )
    assert {"plain", "pills", "html", "meds", "content-type:text/html"} <= set(tokens)
    assert tokens.count("cheap") == 2


def test_base64_body_is_decoded() -> None:
    part = MIMEText("Gewinnen Sie jetzt Geld, schnell und einfach", "plain", "utf-8")
    assert part["Content-Transfer-Encoding"] == "base64"
    tokens = mail(part.as_string()).tokens
    assert {
        "gewinnen",
        "geld",
        "einfach",
        "content-transfer-encoding:base64",
        "charset:utf-8",
    } <= set(tokens)
    assert not any("R2V3" in t for t in tokens)  # no base64 text


def test_quoted_printable_body_is_decoded() -> None:
    raw = (
        "Content-Type: text/plain; charset=iso-8859-1\n"
        "Content-Transfer-Encoding: quoted-printable\n\n"
        "Tr=E8s bon march=E9, soft=\nbreak\n"
    )
    tokens = mail(raw).tokens
    assert {"très", "bon", "marché", "softbreak"} <= set(tokens)


def test_html_only_mail_gives_visible_text_and_link_hosts() -> None:
    html = (
        "<html><head><style>.x{color:red}</style><script>var hidden='secret';</script></head>"
        '<body><div class="promo">Claim your <b>PRIZE</b> &amp; more&nbsp;today'
        '<a href="http://Claim.Prize-Site.ru/win?id=7">here</a>'
        "<img src='https://cdn.example.net/p.gif'><!-- invisible comment --></div></body></html>"
    )
    tokens = mail(MIMEText(html, "html", "utf-8").as_string()).tokens
    assert {"claim", "your", "prize", "more", "today", "here"} <= set(tokens)
    assert {
        "url:claim.prize-site.ru",
        "url:prize-site.ru",
        "urlpath:win",
        "url:cdn.example.net",
    } <= set(tokens)
    for absent in (
        "div",
        "promo",
        "class",
        "color",
        "hidden",
        "secret",
        "invisible",
        "img",
        "href",
    ):
        assert absent not in tokens
    assert not any("<" in t or ">" in t or "&" in t for t in tokens)


def test_mailto_links_give_address_tokens() -> None:
    html = '<p>write <a href="MAILTO:Boss@Example.com?subject=hi">me</a></p>'
    tokens = mail(MIMEText(html, "html").as_string()).tokens
    assert {"email:boss", "email:example.com"} <= set(tokens)


def test_unknown_charset_with_8bit_bytes_still_gives_tokens() -> None:
    raw = (
        'Content-Type: text/plain; charset="x-unknown"\n'
        "Content-Transfer-Encoding: 8bit\n\n"
        "Achetez maintenant caf\xe9 cr\xe8me\n"
    )
    assert {"achetez", "maintenant", "café", "crème", "charset:x-unknown"} <= set(mail(raw).tokens)


def test_unknown_charset_with_base64_bytes_falls_back() -> None:
    raw = (
        'Content-Type: text/plain; charset="x-unknown"\n'
        "Content-Transfer-Encoding: base64\n\n"
        "QWNoZXRleiBjYWbpIG1haW50ZW5hbnQ=\n"  # b"Achetez caf\xe9 maintenant": not UTF-8
    )
    assert {"achetez", "café", "maintenant"} <= set(mail(raw).tokens)


def test_lying_and_bogus_charsets_do_not_raise() -> None:
    for charset in ("utf-8", "base64", "rot13", "punycode", "utf-16", "\x00"):
        raw = (
            f'Content-Type: text/plain; charset="{charset}"\n'
            "Content-Transfer-Encoding: base64\n\n/////w==\n"
        )
        result = mail(raw)
        assert "content-type:text/plain" in result.tokens


def test_mail_without_body() -> None:
    result = mail("From: someone@example.com\nSubject: empty\n")
    assert result.tokens[:3] == ["subject:empty", "from:example.com", "from:local:someone"]
    assert "content-type:text/plain" in result.tokens


def test_empty_mail() -> None:
    assert mail("").tokens == ["content-type:text/plain"]


def test_huge_subject_is_cut_at_max_tokens() -> None:
    raw = "Subject: " + "free money " * 100_000 + "\n\nbody\n"  # 1.1 MB
    result = mail(raw)
    assert result.tokens[:2] == ["subject:free", "subject:money"]
    assert len(result.tokens) == 10_000
    assert result.truncated and {"max_bytes", "max_tokens"} <= result.flags


def test_attachment_gives_type_size_and_extension() -> None:
    m = MIMEMultipart()
    m["Subject"] = "invoice"
    m.attach(MIMEText("see attached"))
    pdf = MIMEApplication(b"%PDF" + bytes(5000), "pdf")
    pdf.add_header("Content-Disposition", "attachment", filename="Invoice.2024.PDF.exe")
    m.attach(pdf)
    tokens = mail(m.as_string()).tokens
    assert {"see", "attached", "attach:application/pdf", "attachsize:10k", "attachext:exe"} <= set(
        tokens
    )
    assert "content-type:multipart/mixed" in tokens


def test_text_attachment_is_read_and_marked() -> None:
    m = MIMEMultipart()
    note = MIMEText("secret plans")
    note.add_header("Content-Disposition", "attachment", filename="plans.txt")
    m.attach(note)
    tokens = mail(m.as_string()).tokens
    assert {"secret", "plans", "attach:text/plain", "attachsize:1k", "attachext:txt"} <= set(tokens)


def test_malformed_boundary_is_flagged_and_still_tokenized() -> None:
    raw = (
        'Content-Type: multipart/mixed; boundary="XYZ"\n\n'
        "preamble words\n"
        "--WRONG\n"
        "Content-Type: text/plain\n\n"
        "lost boundary body\n"
    )
    result = mail(raw)
    assert "mime_defect" in result.flags
    assert not result.truncated
    assert {"lost", "boundary", "body"} <= set(result.tokens)


def test_broken_base64_is_flagged() -> None:
    raw = "Content-Type: text/plain\nContent-Transfer-Encoding: base64\n\naGVsbG8gd29ybGQ\n"
    result = mail(raw)
    assert "mime_defect" in result.flags
    assert "hello" in result.tokens


def test_text_that_is_not_mail_is_read_as_body() -> None:
    result = mail("just some words, no headers at all")
    assert {"just", "some", "words", "headers"} <= set(result.tokens)
    assert "mime_defect" in result.flags


def test_deep_nesting_is_read_as_headers_and_text() -> None:
    depth = 3000  # the stdlib parser recurses per level: this would raise RecursionError
    raw = "Subject: nest\n"
    for i in range(depth):
        raw += f'Content-Type: multipart/mixed; boundary="b{i}"\n\n--b{i}\n'
    raw += "Content-Type: text/plain\n\ninnermost words\n"
    result = mail(raw)
    assert result.tokens[0] == "subject:nest"
    assert result.truncated and "max_parts" in result.flags


def test_nested_message_parts_are_walked() -> None:
    inner = EmailMessage()
    inner["Subject"] = "inner"
    inner.set_content("forwarded lottery text")
    outer = EmailMessage()
    outer["Subject"] = "fwd"
    outer.set_content("see below")
    outer.add_attachment(inner)
    tokens = mail(outer.as_string()).tokens
    assert {"see", "below", "forwarded", "lottery", "content-type:message/rfc822"} <= set(tokens)


# --- what a person reads of a mail (Tokens.mail), from the same parse -------------------------


def test_mail_fields_are_the_first_subject_and_from_and_the_first_text_part() -> None:
    raw = (
        "From: =?utf-8?b?w4l2ZQ==?= <eve@example.com>\n"
        "From: second@example.com\n"
        "Subject: =?iso-8859-1?q?Prix_=E0_gagner?=\n"
        "Subject: second\n"
        'Content-Type: multipart/mixed; boundary="b1"\n\n'
        "--b1\nContent-Type: text/plain\nContent-Disposition: attachment\n\nattached\n"
        '--b1\nContent-Type: multipart/alternative; boundary="b2"\n\n'
        "--b2\nContent-Type: text/html\n\n<p>HTML version</p>\n"
        "--b2\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n"
        "UHJlbWllcg==\n"
        "--b2\nContent-Type: text/plain\n\nsecond text\n--b2--\n--b1--\n"
    )
    result = mail(raw)
    assert result.mail == MailFields("Prix à gagner", "Éve <eve@example.com>", "Premier")
    assert "attached" in result.tokens  # tokenized, but not what a person reads first


def test_mail_fields_of_html_only_of_8bit_text_and_of_a_mail_without_text() -> None:
    html = mail("Subject: s\nContent-Type: text/html\n\n<P>Bonjour</P>")
    assert html.mail == MailFields("s", None, "<P>Bonjour</P>", html=True)
    # text that arrived as text: read as it is, whatever the charset says
    eight_bit = mail("Content-Type: text/plain; charset=utf-8\n\nréclamez 100 €")
    assert eight_bit.mail == MailFields(None, None, "réclamez 100 €")
    pdf = mail("Content-Type: application/pdf\nContent-Transfer-Encoding: base64\n\nJVBERi0=")
    assert pdf.mail == MailFields()
    assert tokenize({"text": "not mail"}).mail is None  # text has none


def test_mail_fields_come_from_what_the_limits_let_through() -> None:
    # a mail with more delimiter lines than MAX_MIME_PARTS is read as headers and a body: its
    # multipart body is no text part
    raw = 'Subject: many\nContent-Type: multipart/mixed; boundary="b"\n\n' + "--b\n" * 2000
    result = mail(raw)
    assert "max_parts" in result.flags and result.mail == MailFields("many")
    # limits.max_bytes cuts the mail, in UTF-8 bytes: what lies past it is not read
    cut = tokenize(
        {"text": "Subject: é\n\n" + "é" * 20 + "\nFrom: late", "format": "email"},
        TokenizerConfig(max_bytes=30),
    )
    assert "max_bytes" in cut.flags and cut.mail == MailFields("é", None, "é" * 8)


def test_a_look_alike_sender_and_link_read_as_what_they_imitate_and_say_so() -> None:
    raw = (
        "From: PayPal <service@p\u0430ypal.com>\nSubject: account\nContent-Type: text/html\n\n"
        '<a href="http://p\u0430yp\u0430l.com/login">log in</a>'
    )
    read = tokenize({"text": raw, "format": "email"}).tokens
    assert {"from:paypal.com", "url:paypal.com", "trick:lookalike"} <= set(read)
    assert not [t for t in read if "\u0430" in t]  # no token keeps the Cyrillic letter
    honest = raw.replace("\u0430", "a")
    assert "trick:lookalike" not in tokenize({"text": honest, "format": "email"}).tokens
