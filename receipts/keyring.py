"""Ed25519 receipt keys: read from ATTEST_SIGNING_KEYS, created and rotated in a key directory.

The source is one of:

- a directory of PEM files (the default, ``var/signing_keys``). Each ``*.pem`` holds an
  Ed25519 private key (PKCS#8) or, for a retired key, only its public key. A file named
  ``active`` holds the kid of the signing key; without it the newest private key signs.
  Rotation writes a new key, then replaces ``active`` atomically, then swaps the old
  private key file for a public-only one. Every process re-reads the directory when its
  listing changes, so all processes sharing the directory agree without talking.
- a single PEM file or an inline PEM value (several blocks may follow each other). The
  first private key signs; every other key only verifies. Rotate these by editing the
  value: put the new private key first and keep the old one (or its public key) after it.

No Django here: the caller passes the source string, so tests can point at a temp dir.
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from joserfc.jwk import OKPKey

# joserfc (and the cryptography under it) is imported where a key is read, made or shown,
# not by every importer of the keyring (the admin, so every manage.py command).

ACTIVE_MARKER = "active"
_LOCK = ".lock"
_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----.+?-----END \1-----", re.DOTALL)
_STAMP = re.compile(r"(\d{8}T\d{6}Z)-")

SourceKind = Literal["directory", "file", "inline"]
KeyState = Literal["active", "retired"]


class KeyConfigError(Exception):
    """The configured keys cannot be read or no key can sign; the message says what to fix."""


@dataclass(frozen=True)
class KeyEntry:
    kid: str
    public: OKPKey
    private: OKPKey | None
    state: KeyState
    created: datetime | None
    origin: str

    @property
    def can_sign(self) -> bool:
        return self.private is not None

    @property
    def signer(self) -> OKPKey:
        """The private half, for the entry KeyRing.signing_key() chose (it has one)."""
        if self.private is None:
            raise KeyConfigError(f"Key {self.kid} in {self.origin} has no private half.")
        return self.private

    def public_jwk(self) -> dict:
        from attest_core.jws import ALGORITHM

        jwk = self.public.as_dict(private=False)
        return {
            "kty": jwk["kty"],
            "crv": jwk["crv"],
            "x": jwk["x"],
            "kid": self.kid,
            "use": "sig",
            "alg": ALGORITHM,
        }


@dataclass(frozen=True)
class KeyRing:
    kind: SourceKind
    location: str
    entries: tuple[KeyEntry, ...]

    @property
    def active(self) -> KeyEntry | None:
        return next((entry for entry in self.entries if entry.state == "active"), None)

    def signing_key(self) -> KeyEntry:
        active = self.active
        if active is None or active.private is None:
            raise KeyConfigError(
                f"No active Ed25519 signing key in {self.location}: run "
                "`python manage.py ensure_signing_key` or set ATTEST_SIGNING_KEYS."
            )
        return active

    def public_keys(self) -> dict[str, OKPKey]:
        return {entry.kid: entry.public for entry in self.entries}

    def jwks(self) -> dict:
        return {"keys": [entry.public_jwk() for entry in self.entries]}


def source_kind(source: str) -> SourceKind:
    if not source.strip():
        # An empty path is the working directory: keys would be read from, and created in,
        # wherever the process happens to run (often a source checkout).
        raise KeyConfigError(
            "ATTEST_SIGNING_KEYS is empty: set it to a key directory, a PEM file or an "
            "inline PEM value, or unset it for the default var/signing_keys."
        )
    if "-----BEGIN" in source:
        return "inline"
    return "file" if Path(source).is_file() else "directory"


def _import_blocks(text: str, origin: str) -> list[tuple[OKPKey, bool]]:
    """Every Ed25519 key in a PEM text, with whether it carries the private half."""
    from joserfc.errors import JoseError
    from joserfc.jwk import OKPKey

    keys = []
    for match in _PEM_BLOCK.finditer(text):
        label = match.group(1)
        if label not in {"PRIVATE KEY", "PUBLIC KEY"}:
            raise KeyConfigError(
                f"{origin}: a {label} block; use unencrypted PKCS#8 Ed25519 keys "
                "(`openssl genpkey -algorithm ed25519`)."
            )
        try:
            key = OKPKey.import_key(match.group(0).encode("ascii"))
        except (JoseError, ValueError, TypeError) as exc:
            raise KeyConfigError(f"{origin}: not an Ed25519 key ({exc}).") from exc
        if key.as_dict(private=False).get("crv") != "Ed25519":
            raise KeyConfigError(f"{origin}: the key is not on Ed25519.")
        keys.append((key, label == "PRIVATE KEY"))
    if not keys:
        raise KeyConfigError(f"{origin}: no PEM key found.")
    return keys


def _public_only(key: OKPKey) -> OKPKey:
    from joserfc.jwk import OKPKey

    return OKPKey.import_key(key.as_dict(private=False))


def _from_text(kind: SourceKind, text: str, origin: str) -> KeyRing:
    if "\n" not in text.strip():
        # Environment files often carry PEM with literal \n escapes.
        text = text.replace("\\n", "\n")
    entries: dict[str, KeyEntry] = {}
    has_active = False
    for key, private in _import_blocks(text, origin):
        kid = key.thumbprint()
        if kid in entries and (entries[kid].private is not None or not private):
            continue
        state: KeyState = "active" if private and not has_active else "retired"
        has_active = has_active or state == "active"
        entries[kid] = KeyEntry(
            kid=kid,
            public=_public_only(key),
            private=key if private else None,
            state=state,
            created=None,
            origin=origin,
        )
    ordered = sorted(entries.values(), key=lambda entry: entry.state != "active")
    return KeyRing(kind=kind, location=origin, entries=tuple(ordered))


def _pem_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(
        path
        for path in directory.iterdir()
        if path.suffix == ".pem" and not path.name.startswith(".") and path.is_file()
    )


def _created(path: Path) -> datetime:
    stamp = _STAMP.match(path.name)
    if stamp:
        return datetime.strptime(stamp.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    return datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)


def _read_marker(directory: Path) -> str | None:
    try:
        return (directory / ACTIVE_MARKER).read_text().strip() or None
    except FileNotFoundError:
        return None


def _from_directory(directory: Path) -> KeyRing:
    found: dict[str, tuple[OKPKey, bool, datetime, str]] = {}
    for path in _pem_files(directory):
        created = _created(path)
        for key, private in _import_blocks(path.read_text(), str(path)):
            kid = key.thumbprint()
            if kid not in found or (private and not found[kid][1]):
                found[kid] = (key, private, created, str(path))
    marker = _read_marker(directory)
    active_kid: str | None
    if marker is not None:
        active_kid = marker
    else:
        signers = [(created, kid) for kid, (_, private, created, _) in found.items() if private]
        active_kid = max(signers)[1] if signers else None
    entries = [
        KeyEntry(
            kid=kid,
            public=_public_only(key),
            private=key if private else None,
            state="active" if kid == active_kid else "retired",
            created=created,
            origin=origin,
        )
        for kid, (key, private, created, origin) in found.items()
    ]
    # Active first, then newest to oldest, so a JWKS reader meets the current key first.
    active = [entry for entry in entries if entry.state == "active"]
    retired = sorted(
        (entry for entry in entries if entry.state != "active"),
        key=lambda entry: (entry.created, entry.kid),
        reverse=True,
    )
    entries = active + retired
    return KeyRing(kind="directory", location=str(directory), entries=tuple(entries))


def _fingerprint(kind: SourceKind, source: str) -> tuple:
    if kind == "inline":
        return (source,)
    path = Path(source)
    if kind == "file":
        stat = path.stat()
        return (stat.st_mtime_ns, stat.st_size, stat.st_ino)
    if not path.is_dir():
        return ()
    listing = []
    for child in sorted(path.iterdir()):
        if child.name.startswith("."):
            continue
        stat = child.stat()
        listing.append((child.name, stat.st_mtime_ns, stat.st_size, stat.st_ino))
    return tuple(listing)


# source string -> (fingerprint, ring). Re-validated on every call, so a rotation made by
# another process shows here on the next request; the cache only saves PEM parsing.
_CACHE: dict[str, tuple[tuple, KeyRing]] = {}


def load_keyring(source: str) -> KeyRing:
    """The keys at ``source`` (directory, PEM file or inline PEM), re-read when they change."""
    kind = source_kind(source)
    for attempt in range(3):
        try:
            return _load(kind, source)
        except FileNotFoundError:
            # A rotation in another process swapped a file between listing and reading it;
            # the next listing is consistent again.
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _load(kind: SourceKind, source: str) -> KeyRing:
    fingerprint = _fingerprint(kind, source)
    cached = _CACHE.get(source)
    if cached is not None and cached[0] == fingerprint:
        return cached[1]
    if kind == "inline":
        ring = _from_text(kind, source, "inline ATTEST_SIGNING_KEYS")
    elif kind == "file":
        ring = _from_text(kind, Path(source).read_text(), source)
    else:
        ring = _from_directory(Path(source))
    _CACHE[source] = (fingerprint, ring)
    return ring


def _require_directory(source: str) -> Path:
    kind = source_kind(source)
    if kind != "directory":
        raise KeyConfigError(
            f"ATTEST_SIGNING_KEYS is {'an inline value' if kind == 'inline' else 'a file'}; "
            "keys can be created and rotated only in a key directory. Put a new private key "
            "first in the value and keep the old key after it instead."
        )
    return Path(source)


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(directory / _LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write_atomically(path: Path, data: bytes, mode: int) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)


def _new_key_file(directory: Path, now: datetime) -> str:
    from joserfc.jwk import OKPKey

    key = OKPKey.generate_key("Ed25519")
    kid = key.thumbprint()
    name = f"{now.astimezone(UTC):%Y%m%dT%H%M%SZ}-{kid}.pem"
    _write_atomically(directory / name, key.as_pem(private=True), 0o600)
    return kid


def _activate(directory: Path, kid: str) -> None:
    _write_atomically(directory / ACTIVE_MARKER, f"{kid}\n".encode(), 0o644)


def _retire_private_files(directory: Path, keep: str) -> None:
    """Swap every other private key file for a public-only one: retired keys cannot sign."""
    for path in _pem_files(directory):
        blocks = _import_blocks(path.read_text(), str(path))
        if len(blocks) != 1 or not blocks[0][1] or blocks[0][0].thumbprint() == keep:
            continue
        public = blocks[0][0].as_pem(private=False)
        _write_atomically(path.with_name(f"{path.stem}.pub.pem"), public, 0o644)
        path.unlink()


def ensure_key(source: str, *, now: datetime) -> tuple[KeyEntry, bool]:
    """The active signing key, creating one if the key directory has none. (entry, created)"""
    if source_kind(source) != "directory":
        return load_keyring(source).signing_key(), False
    directory = _require_directory(source)
    with _locked(directory):
        ring = load_keyring(source)
        if ring.active is not None:
            return ring.signing_key(), False
        if _read_marker(directory) is not None:
            raise KeyConfigError(
                f"{directory / ACTIVE_MARKER} names a key that is not in {directory}."
            )
        kid = _new_key_file(directory, now)
        _activate(directory, kid)
        return load_keyring(source).signing_key(), True


def rotate_key(source: str, *, now: datetime) -> tuple[KeyEntry, list[KeyEntry]]:
    """Create a new key and make it the signing key; the others stay for verification only."""
    directory = _require_directory(source)
    with _locked(directory):
        kid = _new_key_file(directory, now)
        _activate(directory, kid)
        _retire_private_files(directory, keep=kid)
        ring = load_keyring(source)
        return ring.signing_key(), [entry for entry in ring.entries if entry.kid != kid]
