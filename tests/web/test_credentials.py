"""[http] credentials: hashes only, checked at load, never shown; the hashing command."""

import pytest
from click.testing import CliRunner

from filterd.cli import main
from filterd.service.config import ConfigError, load
from filterd.service.passwords import hash_secret, parse_hash, verify
from filterd.web.auth import Authenticator
from tests.web.conftest import PASSWORD, ROUNDS, basic


def test_a_hash_verifies_its_secret_only():
    for scheme in ("scrypt", "pbkdf2_sha256"):
        hashed = parse_hash(hash_secret(PASSWORD, scheme, rounds=ROUNDS))
        assert verify(PASSWORD, hashed) and not verify(PASSWORD + " ", hashed)
    # salted: the same secret hashes differently each time
    assert hash_secret("x", "pbkdf2_sha256", rounds=ROUNDS) != hash_secret(
        "x", "pbkdf2_sha256", rounds=ROUNDS
    )


@pytest.mark.parametrize(("value", "said"), [
    ('"hunter2"', "http.users.dana: not a hash"),
    ('"md5$a$b$c"', "http.users.dana: unknown hash scheme 'md5'"),
    ('"scrypt$n=3,r=8,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"', "http.users.dana: scrypt parameters"),
    ('"pbkdf2_sha256$i=99999999999$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"', "http.users.dana: pbkdf2_sha256 takes i"),
])  # fmt: skip
def test_a_bad_hash_is_one_line_naming_the_key_and_never_quoting_it(value, said):
    with pytest.raises(ConfigError) as raised:
        load(None, {"FILTERD_HTTP_USERS": "{dana = %s}" % value})
    assert str(raised.value).startswith(said) and "\n" not in str(raised.value)
    assert "hunter2" not in str(raised.value)


def test_a_bad_http_setting_names_the_key(tmp_path):
    path = tmp_path / "f.toml"
    path.write_text("[http]\nport = 70000\n")
    with pytest.raises(ConfigError, match=r"http.port: must be a port number"):
        load(path, {})
    path.write_text('[http]\nenabled = "yes"\n')
    with pytest.raises(ConfigError, match=r"http.enabled: expected bool"):
        load(path, {})
    hashed = hash_secret(PASSWORD, "pbkdf2_sha256", rounds=ROUNDS)
    path.write_text(f'[http]\ntokens = {{"a:b" = "{hashed}"}}\n')
    with pytest.raises(ConfigError, match=r"http.tokens.a:b: an analyst name"):
        load(path, {})


def test_credentials_come_from_the_environment_and_never_show():
    hashed = hash_secret(PASSWORD, "pbkdf2_sha256", rounds=ROUNDS)
    config = load(
        None, {"FILTERD_HTTP_USERS": '{dana = "%s"}' % hashed, "FILTERD_HTTP_ENABLED": "true"}
    )
    assert config.http.enabled and config.http.users == {"dana": hashed}
    shown = config.public()["http"]
    assert shown["users"] == {"dana": "***"} and hashed not in str(config.public())


def test_a_token_names_its_analyst_and_a_wrong_one_names_nobody():
    token = "dana.s3cr3t-token"
    auth = Authenticator({"dana": hash_secret(token, "pbkdf2_sha256", rounds=ROUNDS)},
                         {"lee": hash_secret(PASSWORD, "pbkdf2_sha256", rounds=ROUNDS)})  # fmt: skip
    assert auth.identify(f"Bearer {token}") == "dana"
    assert auth.identify(f"Bearer {token}") == "dana"  # remembered, still right
    assert auth.identify(basic("lee", PASSWORD)) == "lee"
    for wrong in (None, "", "Bearer dana.wrong", "Bearer s3cr3t-token", f"Bearer lee.{token}",
                  basic("lee", "wrong"), basic("dana", token), "Basic !!!", "Digest x"):  # fmt: skip
        assert auth.identify(wrong) is None, wrong


def test_only_a_verified_header_is_remembered_and_never_in_clear():
    token = "dana.s3cr3t-token"
    auth = Authenticator({"dana": hash_secret(token, "pbkdf2_sha256", rounds=ROUNDS)}, {})
    assert auth.remembered(f"Bearer {token}") is None  # not verified yet: identify hashes it
    assert (
        auth.identify("Bearer dana.wrong") is None and auth.remembered("Bearer dana.wrong") is None
    )
    assert auth.identify(f"Bearer {token}") == "dana"
    assert auth.remembered(f"Bearer {token}") == "dana"
    assert auth.remembered(None) is None and auth.remembered("") is None
    assert not any(token.encode() in key or "s3cr3t" in str(key) for key in auth._verified)


def test_guessing_at_a_name_is_throttled_without_locking_out_a_verified_caller():
    from filterd.web.auth import FAILURE_WINDOW, FAILURES

    now = [0.0]
    auth = Authenticator({}, {"lee": hash_secret(PASSWORD, "pbkdf2_sha256", rounds=ROUNDS)},
                         clock=lambda: now[0])  # fmt: skip
    assert auth.identify(basic("lee", PASSWORD)) == "lee"  # verified, then remembered
    for i in range(FAILURES):
        assert auth.identify(basic("lee", f"guess-{i}")) is None
    assert auth.throttled("lee") and not auth.throttled("dana")
    assert auth.identify(basic("lee", PASSWORD)) == "lee"  # the remembered header still works
    fresh = Authenticator({}, {"lee": hash_secret(PASSWORD, "pbkdf2_sha256", rounds=ROUNDS)},
                          clock=lambda: now[0])  # fmt: skip
    for i in range(FAILURES):
        fresh.identify(basic("lee", f"guess-{i}"))
    assert fresh.identify(basic("lee", PASSWORD)) is None  # refused unhashed while throttled
    now[0] += FAILURE_WINDOW + 1
    assert not fresh.throttled("lee") and fresh.identify(basic("lee", PASSWORD)) == "lee"


def test_hash_password_reads_stdin_and_prints_a_hash_that_loads():
    result = CliRunner().invoke(main, ["http", "hash-password", "--scheme", "pbkdf2_sha256"],
                                input=PASSWORD + "\n")  # fmt: skip
    assert result.exit_code == 0, result.output
    hashed = result.output.strip()
    assert PASSWORD not in result.output and verify(PASSWORD, parse_hash(hashed))
    assert load(None, {"FILTERD_HTTP_USERS": '{dana = "%s"}' % hashed}).http.users["dana"] == hashed


def test_new_token_prints_a_token_and_the_hash_that_admits_it():
    result = CliRunner().invoke(main, ["http", "new-token", "dana"])
    assert result.exit_code == 0, result.output
    token = result.output.splitlines()[0].removeprefix("token: ")
    hashed = result.output.splitlines()[1].split(" = ")[1].strip('"')
    assert Authenticator({"dana": hashed}, {}).identify(f"Bearer {token}") == "dana"
