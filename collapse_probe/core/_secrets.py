"""Secrets this process was configured with, kept out of everything it writes or prints.

A secret reaches the package two ways: an API key read from the environment (held in
:class:`~collapse_probe.models._http.Secret`) and credentials written into a model spec's base URL
(``openai-compatible/m@http://user:PW@host/v1``, ``...?api_key=KEY``). Both are *registered* here
(a URL's user and password also as the ``base64(user:PW)`` an HTTP Basic header carries),
and every writer of a run file (:mod:`collapse_probe.core._output`), every transport error text and the
CLI's terminal output pass through :func:`scrub`, which replaces each registered secret -- raw, as
JSON and ``repr`` escape it, percent-encoded, and line by line for a key with an embedded newline --
and any URL credentials (user info, secret-looking query parameters) by ``***``.

A spec is recorded in its redacted form (:func:`redact_spec`): ``config.json``, records, results,
usage, reports and the terminal name ``openai-compatible/m@http://***@host/v1``, and the backend is
built from the real spec, which stays in this process only.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from collections.abc import Iterable
from typing import Any

__all__ = [
    "MASK",
    "ScrubbingStream",
    "contains_secret",
    "public_spec",
    "real_spec",
    "redact_spec",
    "redact_url",
    "register_basic_auth",
    "register_env_secrets",
    "register_secret",
    "scrub",
    "scrub_value",
    "scrubbed_terminal",
]

MASK = "***"

MIN_SECRET_LENGTH = 6
"""Registered values shorter than this are not replaced in free text (a password ``abc`` would turn
every ``abc`` of a conversation into ``***``); in URLs they are still masked by position."""

SECRET_PARAM = re.compile(
    r"key|token|secret|passw|pwd|auth|sig|credential|session|bearer|jwt|private|access|code", re.IGNORECASE
)
"""A query parameter whose name matches this is a secret (``api_key``, ``access_token``, ``sig``, ...)."""

_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^\s/?#@\"'<>\\]+)@")
_QUERY_SECRET = re.compile(r"([?&;]([^=&#\s\"'<>\\]*)=)([^&#\s\"'<>\\]+)")
_BEARER = re.compile(r"\b([Bb]earer\s+)(?=[A-Za-z._~+/=\-]*[0-9])([A-Za-z0-9._~+/=\-]{8,})")
"""A bearer token (letters and at least one digit: "the bearer instrument" in a reply is left alone)."""

_LOCK = threading.Lock()
_SECRETS: set[str] = set()
_VARIANTS: list[str] = []
"""Every written form of every registered secret, longest first."""


def _variants(secret: str) -> set[str]:
    import html

    forms = {secret, json.dumps(secret, ensure_ascii=False)[1:-1], json.dumps(secret)[1:-1], repr(secret)[1:-1]}
    forms.add(html.escape(secret))
    forms.add(urllib.parse.quote(secret, safe=""))
    forms.add(urllib.parse.quote_plus(secret, safe=""))
    try:
        forms.add(repr(secret.encode("utf-8"))[2:-1])
    except UnicodeEncodeError:
        pass
    for part in re.split(r"[\r\n\t\x00-\x1f]+", secret):  # a key with an embedded newline, line by line
        if len(part) >= MIN_SECRET_LENGTH:
            forms.add(part)
    return {f for f in forms if len(f) >= MIN_SECRET_LENGTH}


def register_secret(value: str | None) -> None:
    """Remember ``value`` as a secret of this process (an API key, a URL password)."""
    if not value or not isinstance(value, str):
        return
    value = value.strip("\r\n") or value
    with _LOCK:
        if value in _SECRETS:
            return
        _SECRETS.add(value)
        forms = set(_VARIANTS) | _variants(value)
        _VARIANTS[:] = sorted(forms, key=len, reverse=True)


def register_basic_auth(user: str, password: str) -> None:
    """Register the HTTP Basic credentials a client sends for ``user:password`` (as written in a URL,
    percent-encoded or not): ``base64(user:password)``, which a server quoting its request headers
    puts in an error body or a reply."""
    import base64

    pairs = {f"{user}:{password}", f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}"}
    for pair in pairs:
        for encoding in ("utf-8", "latin-1"):  # httpx encodes Basic credentials as latin-1 where it can
            try:
                raw = pair.encode(encoding)
            except UnicodeEncodeError:
                continue
            register_secret(base64.b64encode(raw).decode("ascii"))
            register_secret(base64.urlsafe_b64encode(raw).decode("ascii"))


def register_env_secrets(names: Iterable[str], *, min_length: int = MIN_SECRET_LENGTH) -> None:
    """Register the values of the environment variables ``names`` that are set (credentials an SDK
    reads by itself: ``$AWS_SECRET_ACCESS_KEY``, ``$AZURE_OPENAI_AD_TOKEN``, LiteLLM's providers' keys);
    values shorter than ``min_length`` are left alone."""
    import os

    for name in names:
        value = os.environ.get(name, "").strip()
        if len(value) >= min_length:
            register_secret(value)


def forget_secrets() -> None:
    """Forget every registered secret (tests)."""
    with _LOCK:
        _SECRETS.clear()
        _VARIANTS.clear()


def _mask_query(m: re.Match[str]) -> str:
    return m.group(1) + MASK if SECRET_PARAM.search(m.group(2)) and m.group(3) != MASK else m.group(0)


def scrub(text: str) -> str:
    """``text`` with every registered secret and any URL credentials replaced by ``***``."""
    if not isinstance(text, str) or not text:
        return text
    for form in _VARIANTS:
        if form in text:
            text = text.replace(form, MASK)
    if "://" in text:
        text = _URL_USERINFO.sub(lambda m: m.group(1) + MASK + "@", text)
    if "=" in text:
        text = _QUERY_SECRET.sub(_mask_query, text)
    if "earer" in text:
        text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    return text


def scrub_value(value: Any) -> Any:
    """``value`` (JSON data) with :func:`scrub` applied to every string and key."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub(k) if isinstance(k, str) else k: scrub_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_value(v) for v in value]
    return value


def contains_secret(text: str) -> bool:
    """Whether ``text`` holds a registered secret (raw or in one of its escaped forms)."""
    return isinstance(text, str) and any(form in text for form in _VARIANTS)


def redact_url(url: str) -> str:
    """``url`` with its user info and secret-looking query values masked (``http://***@host/v1?api_key=***``).

    The host, port, path and the other query parameters are kept: they say which server and which
    model answered. The credentials found are registered (:func:`register_secret`).
    """
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return scrub(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, _, password = userinfo.partition(":")
        for s in (userinfo, user, password, urllib.parse.unquote(password), urllib.parse.unquote(user)):
            register_secret(s)
        register_basic_auth(user, password)
        netloc = f"{MASK}@{hostport}"
    query = parts.query
    if query:
        kept = []
        for field in re.split(r"([&;])", query):
            name, eq, value = field.partition("=")
            if eq and value and SECRET_PARAM.search(name):
                register_secret(value)
                register_secret(urllib.parse.unquote_plus(value))
                field = f"{name}={MASK}"
            kept.append(field)
        query = "".join(kept)
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


_SPEC_URL = re.compile(r"(?i)[a-z][a-z0-9+.\-]*://\S*")


def redact_spec(spec: str) -> str:
    """A model spec as it may be recorded: any base URL in it through :func:`redact_url`.

    >>> redact_spec("openai-compatible/m@http://u:pw@127.0.0.1:8000/v1?api_key=k&x=1")
    'openai-compatible/m@http://***@127.0.0.1:8000/v1?api_key=***&x=1'
    """
    if not isinstance(spec, str) or "://" not in spec:
        return spec
    return _SPEC_URL.sub(lambda m: redact_url(m.group(0)), spec)


_REAL_URLS: dict[str, str] = {}
"""Redacted base URL -> the URL with its credentials (this process only; see :func:`public_spec`)."""


def public_spec(spec: str) -> str:
    """:func:`redact_spec`, remembering the real URL so that :func:`real_spec` gives it back: a
    command holds and records the redacted spec, and only the backend that connects sees the real one."""
    if not isinstance(spec, str) or "://" not in spec:
        return spec

    def one(m: re.Match[str]) -> str:
        shown = redact_url(m.group(0))
        if shown != m.group(0):
            with _LOCK:
                _REAL_URLS[shown] = m.group(0)
        return shown

    return _SPEC_URL.sub(one, spec)


def real_spec(spec: str) -> str:
    """The spec with each redacted URL :func:`public_spec` saw replaced by the real one."""
    if not isinstance(spec, str) or MASK not in spec or not _REAL_URLS:
        return spec
    return _SPEC_URL.sub(lambda m: _REAL_URLS.get(m.group(0), m.group(0)), spec)


class ScrubbingStream:
    """A text stream that writes through :func:`scrub` (the CLI's stdout and stderr)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        self._inner.write(scrub(text) if isinstance(text, str) else text)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def scrubbed_terminal() -> Any:
    """Context manager: ``sys.stdout`` and ``sys.stderr`` write through :func:`scrub` while it is open."""
    import contextlib
    import sys

    @contextlib.contextmanager
    def ctx() -> Any:
        out, err = sys.stdout, sys.stderr
        sys.stdout = ScrubbingStream(out)
        sys.stderr = ScrubbingStream(err)
        try:
            yield
        finally:
            sys.stdout, sys.stderr = out, err

    return ctx()
