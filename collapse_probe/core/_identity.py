"""Model identity: a content fingerprint of what actually answers.

A spec string names a model, not its content: ``scripted:cand.json`` rewritten in place, ``hf/./ckpt``
retrained at the same path, or a server at the same URL now serving another model all keep their
spec. Every backend therefore exposes ``fingerprint() -> str``, which enters every response-cache key
and every run's ``config.json`` and conversation records, so a changed model is never served from
the cache, never resumed into an older run and never gated on its predecessor's outputs.

- File-backed models (weights, GGUF, adapters, scripted files): a SHA-256 of the file or of every
  file of the directory, memoised by ``(path, size, mtime)`` in-process and in
  ``fingerprints.json`` next to the response cache, so large weights are hashed once.
- HTTP backends: the base URL (credentials and query removed) plus the model name the server
  reports (its model endpoint), so another model behind the same URL gets another fingerprint.
- vLLM: the model path (content hash for a local directory) or name and revision, plus the LoRA
  adapter's content hash.
- Numerics: torch and vLLM models add what they compute in (:func:`numerics_fingerprint`:
  ``;dtype=bfloat16;device=cuda``, and vLLM's kernel mode), so the same weights loaded in float32 on
  a CPU and in bfloat16 on a GPU -- which sample different texts for the same seed -- never share
  cached samples nor resume each other's runs.

Identity strings sit at the bottom of the package (run directories, benchmarks and reports name
models and data files by them without importing the model layer); the response cache's location
is here too because the fingerprint memo lives beside it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from collapse_probe.core._state import process_cache

logger = logging.getLogger(__name__)

CACHE_FILE = "responses.sqlite"


def default_cache_path() -> Path:
    """``$COLLAPSE_PROBE_CACHE`` or ``~/.cache/collapse-probe/responses.sqlite``.

    ``$COLLAPSE_PROBE_CACHE`` may name a directory (an existing one, or a path ending in ``/``: the
    cache is ``responses.sqlite`` inside it) or the SQLite file itself.
    """
    env = os.environ.get("COLLAPSE_PROBE_CACHE")
    if env:
        p = Path(env).expanduser()
        if p.is_dir() or env.endswith(("/", os.sep)):
            return p / CACHE_FILE
        return p
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "collapse-probe" / CACHE_FILE


_MEMO: dict[tuple[str, int, int], str] = process_cache("identity.file_hashes", {})
"""``(resolved path, size, mtime_ns)`` -> sha256 of that file version."""
_MEMO_LOCK = threading.Lock()
_DISK_MEMO_LOADED: set[str] = process_cache("identity.disk_memos_read", set())
"""On-disk memo files already merged into :data:`_MEMO` (emptied with it, so they are read again)."""


def _memo_path() -> Path | None:
    try:
        return default_cache_path().parent / "fingerprints.json"
    except Exception:  # an unusable cache location only loses the on-disk memo
        return None


def _load_disk_memo(path: Path) -> None:
    if str(path) in _DISK_MEMO_LOADED:
        return
    _DISK_MEMO_LOADED.add(str(path))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(data, dict):
        return
    for k, v in data.items():
        parts = k.rsplit("|", 2) if isinstance(k, str) else []
        if len(parts) == 3 and isinstance(v, str):
            try:
                _MEMO[(parts[0], int(parts[1]), int(parts[2]))] = v
            except ValueError:
                continue


def _save_disk_memo(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {f"{p}|{s}|{m}": h for (p, s, m), h in list(_MEMO.items())[-5000:]}
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:  # a read-only cache directory only loses the memo
        pass


def _hash_file(path: Path) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _MEMO_LOCK:
        if key in _MEMO:
            return _MEMO[key]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()
    with _MEMO_LOCK:
        _MEMO[key] = digest
    return digest


def file_fingerprint(path: str | Path) -> str:
    """``sha256:<hex>`` of a file, or of every file (relative path + content) under a directory.

    Memoised by ``(path, size, mtime)`` per file, in-process and on disk next to the response cache.
    A path that does not exist gives ``missing:<path>``.
    """
    p = Path(path)
    memo = _memo_path()
    if memo is not None:
        with _MEMO_LOCK:
            _load_disk_memo(memo)
    before = len(_MEMO)
    if p.is_file():
        digest = _hash_file(p)
    elif p.is_dir():
        h = hashlib.sha256()
        for f in sorted(q for q in p.rglob("*") if q.is_file() and not q.name.startswith(".")):
            h.update(str(f.relative_to(p)).encode() + b"\x00" + _hash_file(f).encode() + b"\n")
        digest = h.hexdigest()
    else:
        return f"missing:{p}"
    if memo is not None and len(_MEMO) != before:
        with _MEMO_LOCK:
            _save_disk_memo(memo)
    return f"sha256:{digest}"


def bytes_fingerprint(data: bytes) -> str:
    """``sha256:<hex>`` of bytes already read (a scripted file parsed from exactly these bytes)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def clean_url(url: str) -> str:
    """A base URL without credentials, secret query parameters or fragment (safe to record in run
    directories). The other query parameters are kept, sorted: ``?deployment=a`` and
    ``?deployment=b`` may be two models behind one host, and must not share cached samples."""
    from collapse_probe.core._secrets import SECRET_PARAM

    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return "<unparseable url>"
    host = parts.hostname or ""
    if port:
        host = f"{host}:{port}"
    query = "&".join(sorted(f for f in parts.query.split("&") if f and not SECRET_PARAM.search(f.partition("=")[0])))
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path.rstrip("/"), query, ""))


UNVERIFIED = " (unverified)"
"""Suffix of an HTTP fingerprint taken while the server did not say what it serves (down, or no
``/models`` endpoint): it matches any fingerprint of the same URL, since nothing can be told apart."""


def http_fingerprint(base_url: str, model: str, reported: str | None = None) -> str:
    """Identity of an HTTP-served model: cleaned base URL + the model name the server reports.

    ``reported`` is the served model's name as the server states it (its model endpoint, which
    resolves an alias to a snapshot). Without one, or when it only repeats the requested name (a
    server that was down, or that has no such endpoint), the requested name stands in and the
    fingerprint is marked :data:`UNVERIFIED`, so a run made during an outage resumes once the server
    is back and says what it serves.
    """
    if reported and reported != model:
        return f"http:{clean_url(base_url)}#{reported}"
    return f"http:{clean_url(base_url)}#{model}{UNVERIFIED}"


NUMERICS_SEP = ";"
"""Separates a fingerprint's content part from its numerics (``;dtype=...;device=...``)."""


def numerics_fingerprint(base: str, **numerics: str | None) -> str:
    """``base`` with the numerics it is computed in appended, e.g. ``sha256:…;dtype=float32;device=cpu``.

    >>> numerics_fingerprint("sha256:ab", dtype="bfloat16", device="cuda")
    'sha256:ab;dtype=bfloat16;device=cuda'
    """
    return base + "".join(f"{NUMERICS_SEP}{k}={v}" for k, v in numerics.items() if v is not None)


def _content_part(fp: str) -> tuple[str, bool]:
    """``(content part, whether numerics were recorded)`` of a fingerprint."""
    if fp.startswith("http:"):
        return fp, True
    base, sep, _ = fp.partition(NUMERICS_SEP + "dtype=")
    return base, bool(sep)


def same_model(a: str, b: str) -> bool:
    """Whether two fingerprints may name the same model.

    An unverified HTTP fingerprint matches its URL; a fingerprint recorded before numerics were part
    of fingerprints (no ``;dtype=``) matches the same content in any dtype and device, since what it
    ran in was not recorded.
    """
    if a == b:
        return True
    (base_a, qualified_a), (base_b, qualified_b) = _content_part(a), _content_part(b)
    if base_a == base_b and not (qualified_a and qualified_b):
        return True
    if a.endswith(UNVERIFIED) or b.endswith(UNVERIFIED):
        return a.startswith("http:") and b.startswith("http:") and a.split("#", 1)[0] == b.split("#", 1)[0]
    return False


def model_fingerprint(model: Any) -> str:
    """The fingerprint of a backend (or of the backend a wrapper delegates to).

    A wrapper without ``fingerprint()`` that holds its backend in ``inner`` is identified by that
    backend; other backends without one by spec and ``cache_namespace`` only.
    """
    fp = getattr(model, "fingerprint", None)
    if not callable(fp) and getattr(model, "inner", None) is not None and model.inner is not model:
        return model_fingerprint(model.inner)
    if callable(fp):
        try:
            value = fp()
        except Exception as exc:  # a fingerprint that cannot be computed is not a reason to fail a run
            logger.warning("%s: could not compute the model fingerprint (%s)", getattr(model, "spec", model), exc)
            value = None
        if isinstance(value, str) and value:
            return value
    base_url, name = getattr(model, "base_url", None), getattr(model, "model", None)
    if isinstance(base_url, str) and isinstance(name, str):  # an HTTP backend without its own fingerprint()
        return http_fingerprint(base_url, name)
    ns = getattr(model, "cache_namespace", "")
    return f"spec:{getattr(model, 'spec', type(model).__name__)}" + (f"|{ns}" if ns else "")


def participant_fingerprints(participants: Mapping[str, object]) -> dict[str, str]:
    """Label -> fingerprint of each participant's model (mode is part of the label)."""
    return {label: model_fingerprint(getattr(p, "model", p)) for label, p in participants.items()}


def short(fp: str) -> str:
    """A fingerprint shortened for messages (the numerics kept: they may be all that changed)."""
    if fp.startswith("sha256:"):
        base, sep, numerics = fp.partition(NUMERICS_SEP)
        return base[:19] + sep + numerics
    return fp if len(fp) <= 80 else fp[:77] + "..."


def fingerprint_changes(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    """One phrase per spec whose fingerprint differs between two runs (specs absent on one side skipped)."""
    out = []
    for spec in sorted(set(old) & set(new)):
        if not same_model(str(old[spec]), str(new[spec])):
            out.append(f"{spec} (was {short(old[spec])}, now {short(new[spec])})")
    return out
