"""Receipts as compact JWS: tampering, rotation, unknown keys, and a second JOSE library."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import jwt
import pytest
from joserfc import jws
from joserfc.jwk import OKPKey

from attest_core.canonical import b64url_encode
from attest_core.jws import REASONS, RECEIPT_TYP, REGISTRY, sign_compact
from receipts import services
from receipts.keyring import KeyConfigError, ensure_key, load_keyring, rotate_key
from tests.receipts.samples import decode_part, issue_sample

# Issuing a receipt appends it to the transparency log.
pytestmark = pytest.mark.django_db

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
REPO = Path(__file__).resolve().parents[2]


def check(token: str):
    return services.verify_receipt(receipt=token)


def test_receipt_header_names_eddsa_our_type_and_the_active_kid(key_dir, settings):
    settings.ATTEST_PUBLIC_URL = "https://attest.example"
    token = issue_sample()
    header = decode_part(token, 0)
    assert header == {
        "alg": "EdDSA",
        "typ": RECEIPT_TYP,
        "kid": load_keyring(str(key_dir)).active.kid,
    }
    outcome = check(token)
    assert outcome.valid
    assert outcome.claims["route"] == "verify/citations"
    assert outcome.claims["iss"] == "https://attest.example"


def test_kid_is_the_rfc7638_thumbprint_of_the_public_key(key_dir):
    entry = load_keyring(str(key_dir)).active
    assert entry.kid == OKPKey.import_key(entry.public_jwk()).thumbprint()
    assert "d" not in entry.public_jwk()


def test_changing_any_character_of_the_receipt_is_caught(key_dir):
    token = issue_sample()
    assert check(token).valid
    for position, char in enumerate(token):
        if char == ".":
            continue
        for replacement in {ALPHABET[(ALPHABET.index(char) + 1) % 64], "A" if char != "A" else "B"}:
            altered = token[:position] + replacement + token[position + 1 :]
            outcome = check(altered)
            assert not outcome.valid, f"change at {position} went unnoticed"
            assert outcome.reason in REASONS


def test_changing_any_byte_of_the_decoded_header_or_payload_is_caught(key_dir):
    token = issue_sample()
    parts = token.split(".")
    for index in (0, 1):
        raw = base64.urlsafe_b64decode(parts[index] + "==")
        for position in range(len(raw)):
            flipped = bytearray(raw)
            flipped[position] ^= 0x01
            altered = list(parts)
            altered[index] = b64url_encode(bytes(flipped))
            assert not check(".".join(altered)).valid, f"part {index} byte {position}"


def test_changing_any_byte_of_the_signature_is_caught(key_dir):
    token = issue_sample()
    head, body, signature = token.split(".")
    raw = base64.urlsafe_b64decode(signature + "==")
    assert len(raw) == 64
    for position in range(len(raw)):
        for bit in (0x01, 0x80):
            flipped = bytearray(raw)
            flipped[position] ^= bit
            outcome = check(f"{head}.{body}.{b64url_encode(bytes(flipped))}")
            assert outcome.reason == "bad_signature"


def test_a_second_spelling_of_the_signature_is_refused(key_dir):
    token = issue_sample()
    head, body, signature = token.split(".")
    # 64 bytes take 86 characters; the last one carries 4 spare bits a lenient decoder drops.
    last = ALPHABET.index(signature[-1])
    twin = signature[:-1] + ALPHABET[last ^ 0b0001]
    assert base64.urlsafe_b64decode(twin + "==") == base64.urlsafe_b64decode(signature + "==")
    assert check(f"{head}.{body}.{twin}").reason == "malformed"


def test_receipt_from_a_rotated_out_key_still_verifies(key_dir):
    old_token = issue_sample()
    old_kid = decode_part(old_token, 0)["kid"]
    active, retired = services.signing_key_rotate()
    assert active.kid != old_kid
    assert [entry.kid for entry in retired] == [old_kid]

    new_token = issue_sample()
    assert decode_part(new_token, 0)["kid"] == active.kid
    old = check(old_token)
    assert old.valid and old.kid == old_kid and old.key_state == "retired"
    assert check(new_token).key_state == "active"
    # The retired key lost its private half: it can verify but never sign again.
    ring = load_keyring(str(key_dir))
    assert {entry.kid: entry.can_sign for entry in ring.entries} == {
        active.kid: True,
        old_kid: False,
    }
    assert not any("PRIVATE" in p.read_text() for p in key_dir.glob("*.pub.pem"))


def test_rotation_by_another_process_is_seen_without_restart(key_dir):
    before = issue_sample()
    env = {**os.environ, "ATTEST_SIGNING_KEYS": str(key_dir)}
    subprocess.run(
        [sys.executable, "manage.py", "rotate_signing_key"],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
    )
    after = issue_sample()
    assert decode_part(after, 0)["kid"] != decode_part(before, 0)["kid"]
    assert check(before).valid and check(after).valid


def test_receipt_signed_by_an_unknown_key_is_refused(key_dir):
    stranger = OKPKey.generate_key("Ed25519")
    payload = base64.urlsafe_b64decode(issue_sample().split(".")[1] + "==")
    forged = sign_compact(payload, key=stranger, kid=stranger.thumbprint())
    outcome = check(forged)
    assert (outcome.valid, outcome.reason, outcome.kid) == (
        False,
        "unknown_key",
        stranger.thumbprint(),
    )


def test_receipt_signed_by_another_key_under_our_kid_is_refused(key_dir):
    stranger = OKPKey.generate_key("Ed25519")
    kid = load_keyring(str(key_dir)).active.kid
    payload = base64.urlsafe_b64decode(issue_sample().split(".")[1] + "==")
    assert check(sign_compact(payload, key=stranger, kid=kid)).reason == "bad_signature"


def test_wrongly_typed_or_unsigned_receipts_are_refused(key_dir):
    entry = load_keyring(str(key_dir)).active
    payload = base64.urlsafe_b64decode(issue_sample().split(".")[1] + "==")
    as_jwt = jws.serialize_compact(
        {"alg": "EdDSA", "kid": entry.kid, "typ": "JWT"}, payload, entry.private, registry=REGISTRY
    )
    assert check(as_jwt).reason == "wrong_type"
    no_kid = jws.serialize_compact(
        {"alg": "EdDSA", "typ": RECEIPT_TYP}, payload, entry.private, registry=REGISTRY
    )
    assert check(no_kid).reason == "missing_kid"
    header = b64url_encode(json.dumps({"alg": "none", "typ": RECEIPT_TYP}).encode())
    body = b64url_encode(payload)
    assert check(f"{header}.{body}.").reason == "malformed"
    assert check(f"{header}.{body}.{b64url_encode(b'x' * 64)}").reason == "unsupported_algorithm"


def test_signed_payload_that_is_not_a_receipt_is_refused(key_dir):
    entry = load_keyring(str(key_dir)).active
    assert check(sign_compact(b"[1,2]", key=entry.private, kid=entry.kid)).reason == (
        "malformed_payload"
    )


def test_pyjwt_verifies_a_receipt_with_the_jwks_alone(key_dir, api):
    token = issue_sample()
    jwks = api.get("/.well-known/jwks.json").json()
    key_set = jwt.PyJWKSet.from_dict(jwks)
    kid = jwt.get_unverified_header(token)["kid"]
    key = next(k for k in key_set.keys if k.key_id == kid)
    claims = jwt.decode(token, key=key, algorithms=["EdDSA"], issuer="http://127.0.0.1:8000")
    assert claims == check(token).claims
    assert claims["results"][0]["match"] == "exact"

    tampered = token[:-3] + ("AAA" if token[-3:] != "AAA" else "BBB")
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(tampered, key=key, algorithms=["EdDSA"])


def test_pyjwt_verifies_a_retired_keys_receipt_with_the_jwks_alone(key_dir, api):
    old_token = issue_sample()
    services.signing_key_rotate()
    key_set = jwt.PyJWKSet.from_dict(api.get("/.well-known/jwks.json").json())
    assert len(key_set.keys) == 2
    key = key_set[jwt.get_unverified_header(old_token)["kid"]]
    assert jwt.decode(old_token, key=key, algorithms=["EdDSA"])["request_id"] == "req-1"


def test_without_a_marker_the_newest_private_key_signs(tmp_path):
    directory = tmp_path / "keys"
    first, _ = ensure_key(str(directory), now=datetime(2026, 1, 1, tzinfo=UTC))
    second, _ = rotate_key(str(directory), now=datetime(2026, 2, 1, tzinfo=UTC))
    (directory / "active").unlink()
    assert load_keyring(str(directory)).active.kid == second.kid
    assert first.kid != second.kid


def test_ensure_creates_one_key_and_then_keeps_it(tmp_path):
    directory = tmp_path / "fresh"
    entry, created = ensure_key(str(directory), now=datetime.now(UTC))
    again, created_again = ensure_key(str(directory), now=datetime.now(UTC))
    assert created and not created_again and entry.kid == again.kid
    assert len(list(directory.glob("*.pem"))) == 1
    private_file = next(directory.glob("*.pem"))
    assert private_file.stat().st_mode & 0o077 == 0


def test_marker_naming_a_missing_key_fails_loudly(tmp_path, settings):
    directory = tmp_path / "keys"
    ensure_key(str(directory), now=datetime.now(UTC))
    (directory / "active").write_text("no-such-kid\n")
    settings.ATTEST_SIGNING_KEYS = str(directory)
    with pytest.raises(KeyConfigError):
        ensure_key(str(directory), now=datetime.now(UTC))
    with pytest.raises(KeyConfigError, match="ensure_signing_key"):
        issue_sample()


def test_inline_pem_signs_with_the_first_key_and_verifies_with_the_rest(settings):
    new, old = OKPKey.generate_key("Ed25519"), OKPKey.generate_key("Ed25519")
    settings.ATTEST_SIGNING_KEYS = old.as_pem(private=True).decode()
    old_token = issue_sample()
    # Rotation for an inline value: the new key first, the old one kept (public half only).
    inline = new.as_pem(private=True).decode() + old.as_pem(private=False).decode()
    settings.ATTEST_SIGNING_KEYS = inline.replace("\n", "\\n")  # as an .env line carries it
    new_token = issue_sample()
    assert decode_part(new_token, 0)["kid"] == new.thumbprint()
    assert check(old_token).valid and check(old_token).key_state == "retired"
    assert check(new_token).valid
    with pytest.raises(KeyConfigError):
        services.signing_key_rotate()


def test_a_pem_file_source_is_read(tmp_path, settings):
    key = OKPKey.generate_key("Ed25519")
    path = tmp_path / "receipts.pem"
    path.write_bytes(key.as_pem(private=True))
    settings.ATTEST_SIGNING_KEYS = str(path)
    assert decode_part(issue_sample(), 0)["kid"] == key.thumbprint()
    assert services.signing_key_ensure() == (load_keyring(str(path)).active, False)


@pytest.mark.parametrize("kind", ["rsa", "x25519", "encrypted", "garbage"])
def test_keys_that_are_not_plain_ed25519_are_refused(kind, tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519, rsa, x25519

    pkcs8 = serialization.PrivateFormat.PKCS8
    pem = serialization.Encoding.PEM
    if kind == "rsa":
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        text = key.private_bytes(pem, pkcs8, serialization.NoEncryption())
    elif kind == "x25519":
        text = x25519.X25519PrivateKey.generate().private_bytes(
            pem, pkcs8, serialization.NoEncryption()
        )
    elif kind == "encrypted":
        text = ed25519.Ed25519PrivateKey.generate().private_bytes(
            pem, pkcs8, serialization.BestAvailableEncryption(b"secret")
        )
    else:
        text = b"-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n"
    directory = tmp_path / "keys"
    directory.mkdir()
    (directory / "bad.pem").write_bytes(text)
    with pytest.raises(KeyConfigError):
        load_keyring(str(directory))


@pytest.mark.parametrize("source", ["", "   ", "\n"], ids=repr)
def test_an_empty_key_source_fails_loudly_instead_of_using_the_working_directory(
    source, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(KeyConfigError, match="ATTEST_SIGNING_KEYS is empty"):
        load_keyring(source)
    with pytest.raises(KeyConfigError, match="ATTEST_SIGNING_KEYS is empty"):
        ensure_key(source, now=datetime.now(UTC))
    assert list(tmp_path.iterdir()) == []
