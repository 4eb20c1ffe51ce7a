"""Keep the secrets Limbo was given out of every text it writes.

A gateway that echoes the ``Authorization`` header in a 401 body, a harness CLI that prints its
key, a library that logs its request: each would carry a credential into an episode record, a
kept transcript, the terminal or an Allure attachment. Limbo cannot know every secret, but it
knows the ones it was given — the environment variables that hold credentials (the names litellm
and the providers use: ``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``, …), the
credential options (``--model-option api_key=…``, ``azure_ad_token``, an ``Authorization``
entry of ``extra_headers``) and the variables a harness adapter passes through — and replaces
each of them wherever it writes text, in each form it travels in: as is, JSON-escaped (once or
twice: a JSON body quoted in a JSON error), URL-encoded, base64-encoded at any alignment (so
also inside ``Basic base64(user:key)``), hex-encoded, upper- or lower-cased, ``\\u``-escaped
and as HTML character references.

Some credentials live in variables no name rule finds: a connection string
(``DATABASE_URL=postgres://app:pw@db/app``, ``REDIS_URL``) carries its password in the URL's
user-info, a DSN (``SENTRY_DSN``) its key, a webhook URL (``SLACK_WEBHOOK_URL``) is itself the
credential. So a variable's value is also a secret when it is a URL with a password (the
password, and the URL), when its name says DSN or webhook (the whole value, and the user-info),
and names ending in ``_AUTH`` (``NPM_CONFIG__AUTH``) count as credential names.

Values shorter than :data:`MIN_SECRET_CHARS` are left alone: ``api_key=local`` is a
placeholder, and blanking every ``local`` would garble ordinary text.
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import os
import re
import threading
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

MIN_SECRET_CHARS = 8
"""Shorter values are placeholders (``api_key=local``), not secrets worth garbling text for."""

CREDENTIAL_WORD = re.compile(
    r"(?:^|_)[A-Z0-9]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|PAT|CREDENTIALS?|COOKIE"
    r"|AUTH|DSN|WEBHOOK)(?:_|$)|^AUTHORIZATION$|(?:^|_)WEBHOOK_?URL$")
"""A name (upper-cased, ``-`` read as ``_``) whose value is a credential: ``OPENAI_API_KEY``,
``WATSONX_APIKEY``, ``AWS_SESSION_TOKEN``, ``AZURE_CLIENT_SECRET``, ``CLARIFAI_PAT``,
``NPM_CONFIG__AUTH``, ``SENTRY_DSN``, ``SLACK_WEBHOOK_URL``; as an option or header name,
``api_key``, ``azure_ad_token``, ``x-api-key``, ``Authorization``."""


def is_credential_name(name: str) -> bool:
    return bool(CREDENTIAL_WORD.search(name.upper().replace("-", "_")))


def secrets_in_value(name: str, value: str) -> list[str]:
    """The secrets a variable's value holds beyond what its name says: a URL's password (and
    the URL), a DSN's or webhook's whole value, its user-info and its path (a webhook's token
    is its last segment)."""
    found: list[str] = []
    upper = name.upper()
    whole = "DSN" in upper or "WEBHOOK" in upper
    if whole:
        found.append(value)
    with contextlib.suppress(ValueError):
        parts = urllib.parse.urlsplit(value.strip())
        if whole and parts.scheme and parts.path.strip("/"):  # a webhook's token: its path
            found += [parts.path, parts.path.rstrip("/").rsplit("/", 1)[-1]]
        if parts.scheme and parts.netloc and "@" in parts.netloc:
            user, _, password = parts.netloc.rpartition("@")[0].partition(":")
            if password:
                found += [value, urllib.parse.unquote(password), password]
            elif whole and user:
                found += [urllib.parse.unquote(user), user]
    return [item for item in dict.fromkeys(found) if len(item) >= MIN_SECRET_CHARS]


def forms(secret: str) -> list[str]:
    """Every form of ``secret`` to replace: as is, JSON- or Python-escaped (once and twice),
    URL-encoded, hex-encoded, upper- and lower-cased, ``\\u``-escaped, as HTML character
    references, and the part of its base64 encoding that does not depend on its neighbours, at
    each of the three alignments a preceding text can give it."""
    found = {secret, json.dumps(secret, ensure_ascii=False)[1:-1]}
    found |= {secret.upper(), secret.lower(), html.escape(secret),
              "".join(f"\\u{ord(c):04x}" for c in secret),
              "".join(f"\\u{ord(c):04X}" for c in secret),
              "".join(f"&#{ord(c)};" for c in secret),
              "".join(f"&#x{ord(c):x};" for c in secret)}
    hexed = secret.encode("utf-8", "surrogatepass").hex()
    found |= {hexed, hexed.upper()}
    for once in (_json(secret), _repr(secret)):  # a body quoted in an error, quoted again
        found |= {once, _json(once), _repr(once)}
    found.add(urllib.parse.quote(secret, safe=""))
    found.add(urllib.parse.quote_plus(secret, safe=""))
    raw = secret.encode("utf-8", "surrogatepass")
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode("ascii")
        start = -(-offset * 8 // 6)  # the first character made of the secret's bits only
        end = (offset + len(raw)) * 8 // 6  # the last whole one: padding comes after
        core = encoded[start:end]
        if len(core) >= MIN_SECRET_CHARS:
            found.add(core)
            found.add(core.replace("+", "-").replace("/", "_"))  # the URL-safe alphabet
    return sorted((form for form in found if len(form) >= MIN_SECRET_CHARS), key=len,
                  reverse=True)


def _json(text: str) -> str:
    return json.dumps(text)[1:-1]


def _repr(text: str) -> str:
    """As Python shows it inside a quoted string (``str(dict)`` of a parsed error body)."""
    return repr(text)[1:-1]


class Scrubber:
    """Replaces each secret, in each of its :func:`forms`, with ``[LABEL]``: ``[secret
    OPENAI_API_KEY]`` says where the value came from, not what it was."""

    def __init__(self, secrets: Mapping[str, str]) -> None:
        """``secrets`` maps each value to its label."""
        self.secrets = dict(secrets)
        self.markers: dict[str, str] = {}
        for value, label in sorted(secrets.items()):
            for form in forms(value):
                self.markers.setdefault(form, f"[{label}]")
        ordered = sorted(self.markers, key=len, reverse=True)  # the longest form wins
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._bytes_pattern = (re.compile(b"|".join(re.escape(f.encode("utf-8", "surrogatepass"))
                                                    for f in ordered)) if ordered else None)

    def __bool__(self) -> bool:
        return self._pattern is not None

    def found_in(self, text: str) -> bool:
        return any(form in text for form in self.markers)  # plain searches beat one regex

    def text(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(lambda match: self.markers[match.group()], text)

    def data(self, data: bytes) -> bytes:
        if self._bytes_pattern is None:
            return data
        return self._bytes_pattern.sub(
            lambda match: self.markers[match.group().decode("utf-8", "surrogatepass")].encode(),
            data)

    def tree(self, value: Any) -> Any:
        """``value`` (JSON-like: dicts, lists, strings) with every string scrubbed."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.tree(key): self.tree(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.tree(item) for item in value]
        return value

    def adding(self, secrets: Mapping[str, str]) -> Scrubber:
        """This scrubber with more secrets (value → label), e.g. an episode's own token."""
        return Scrubber({**self.secrets, **secrets})

    def file(self, path: Path) -> None:
        """Scrub the file at ``path`` in place (as bytes, so any file type)."""
        data = path.read_bytes()
        cleaned = self.data(data)
        if cleaned != data:
            path.write_bytes(cleaned)


# -- what this process knows -------------------------------------------------------------------
_LOCK = threading.Lock()
_learned: dict[str, str] = {}
_names: dict[Any, str] = {}
"""What a variable name (as ``os.environ`` holds it) says: ``name`` (a credential), ``value``
(its value may hold one: a URL with a password) or ``""`` (Limbo's own, never a secret)."""
_current: tuple[tuple[Any, ...], int, Scrubber] | None = None


def credentials_in(options: Mapping[str, Any], source: str = "") -> dict[str, str]:
    """The credential values among ``options`` (model options, headers, a nested credentials
    mapping): value → where it came from."""
    found: dict[str, str] = {}
    for name, value in options.items():
        label = f"{source}{name}"
        if isinstance(value, Mapping):
            found.update(credentials_in(value, f"{label}."))
        elif isinstance(value, str) and is_credential_name(str(name)):
            found[value] = label
            scheme, _, rest = value.partition(" ")  # "Bearer sk-…": the key on its own too
            if rest and scheme.isalpha():
                found[rest.strip()] = label
    return found


def learn(values: Mapping[str, str]) -> None:
    """Add secrets (value → source name) this process was given: a harness's key, the values
    of its ``passenv`` variables."""
    fresh = {v: f"secret {s}" for v, s in values.items()
             if len(v) >= MIN_SECRET_CHARS and v not in _learned}
    if fresh:
        with _LOCK:
            _learned.update(fresh)


def learn_options(options: Mapping[str, Any]) -> None:
    """Add the credential values among model options (``api_key``, ``extra_headers``, …)."""
    learn(credentials_in(options))


def _raw_environment() -> tuple[Mapping[Any, Any], Callable[[Any], str], Callable[[Any], str]]:
    """The environment as the os module holds it (undecoded on POSIX), and how to decode a
    name and a value of it."""
    data = getattr(os.environ, "_data", None)
    if data is None:
        return os.environ, str, str
    return data, os.environ.decodekey, os.environ.decodevalue


def _credential_variables() -> tuple[tuple[Any, Any], ...]:
    """The environment's credential variables, undecoded: what the scrubber depends on, and
    cheap to compare with the last ones. The other variables do not matter, and change all the
    time: pytest sets ``PYTEST_CURRENT_TEST`` at every phase of every test."""
    global _scanned
    data, decode_name, _ = _raw_environment()
    now = dict(data)  # a copy, and a comparison, in C: far cheaper than the scan below
    now.pop(_CURRENT_TEST, None)
    if _scanned is not None and _scanned[0] == now:
        return _scanned[1]
    found = []
    for raw, value in data.items():
        kind = _names.get(raw)
        if kind is None:
            name = decode_name(raw)
            kind = _names[raw] = ("" if name.startswith("LIMBO_") else
                                  "name" if is_credential_name(name) else "value")
        if kind == "name" or (kind == "value" and _may_hold_secret(value)):
            found.append((raw, value))
    _scanned = (now, tuple(found))
    return _scanned[1]


_scanned: tuple[dict[Any, Any], tuple[tuple[Any, Any], ...]] | None = None
"""The environment last scanned (without ``PYTEST_CURRENT_TEST``) and what it held."""
_CURRENT_TEST: Any = (os.environ.encodekey("PYTEST_CURRENT_TEST")
                      if hasattr(os.environ, "encodekey") else "PYTEST_CURRENT_TEST")


def _may_hold_secret(raw_value: Any) -> bool:
    """Whether a value may be a URL with user-info (cheap: looked at on every scrub)."""
    if isinstance(raw_value, bytes):
        return b"@" in raw_value and b"://" in raw_value
    return "@" in raw_value and "://" in raw_value


def _environment(variables: tuple[tuple[Any, Any], ...]) -> list[tuple[str, str]]:
    _, decode_name, decode_value = _raw_environment()
    secrets = []
    for raw, raw_value in variables:
        value, name = decode_value(raw_value), decode_name(raw)
        if is_credential_name(name) and len(value) >= MIN_SECRET_CHARS and not _is_path(value):
            secrets.append((value, f"secret {name}"))
        secrets += [(item, f"secret {name}") for item in secrets_in_value(name, value)]
    return secrets


def _is_path(value: str) -> bool:
    """``GOOGLE_APPLICATION_CREDENTIALS=/path/to/key.json`` names a file; the path is no secret."""
    return value.startswith(("/", "~", "./")) and "\n" not in value and os.path.exists(
        os.path.expanduser(value))


def current() -> Scrubber:
    """The scrubber for every secret this process knows now: rebuilt when a credential variable
    or the learned secrets change, else the one built before (a record costs one search)."""
    global _current
    environment = _credential_variables()
    cached = _current
    if cached is not None and cached[0] == environment and cached[1] == len(_learned):
        return cached[2]
    known = dict(_environment(environment))
    for value, label in list(_learned.items()):
        known.setdefault(value, label)
    scrubber = Scrubber(known)
    _current = (environment, len(_learned), scrubber)
    return scrubber


def scrub(text: str) -> str:
    """``text`` without any secret this process knows."""
    return current().text(text)
