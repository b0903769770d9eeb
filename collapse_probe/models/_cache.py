"""SQLite response cache.

Key = model spec + the model's content fingerprint (see :mod:`collapse_probe.core._identity`: a
rewritten scripted file, retrained checkpoint or another model behind the same URL never reuses the
old model's samples) + request fingerprint (messages, prompt, sampling params, tools) + *sample index*.
The sample index is part of the key so that N cached samples of one prompt are N independent
draws: caching per prompt would hand back N copies of one answer and fake a collapse error of 0.
Errors are never cached.

Missing samples are fetched as a range (samples 5..9 of a request whose 0..4 are cached), which is
exact only if a backend's sample ``i`` does not depend on what else shares its call: true of the
scripted and embedded torch backends (per-sample seeds; near-ties retaken canonically, in float32
exactly, see :func:`collapse_probe.models.local.tie_tolerance_for`) and of vLLM with batch-invariant
kernels (the vllm backend's default, ``VLLM_BATCH_INVARIANT=1``). Elsewhere (vLLM without them,
HTTP servers) a range fetched later is still made of draws from the right distribution, just not
the draws one call would have made. The fingerprint holds the dtype, device and kernel mode, so
samples computed in different numerics never mix.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from collapse_probe.core._identity import CACHE_FILE
from collapse_probe.core._identity import default_cache_path as default_cache_path  # its old home
from collapse_probe.errors import CacheError
from collapse_probe.models._answers import is_blank
from collapse_probe.models._types import ChatModel, Completion, CompletionRecord, GenerationRequest, GenerationResult
from collapse_probe.models._usage import check_budget, record_local_results


def _cache_error(path: Path, exc: BaseException) -> CacheError:
    return CacheError(
        f"response cache {str(path)!r} is unusable ({exc}); expected an SQLite file written by collapse-probe. "
        "Move or delete it, point $COLLAPSE_PROBE_CACHE elsewhere, or pass --no-cache"
    )


class ResponseCache:
    """A key -> completion store, safe to share between threads of one process."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            self.path = self.path / CACHE_FILE
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            self._conn.commit()
            self._conn.execute("SELECT key, value FROM responses LIMIT 1").fetchall()
        except (sqlite3.Error, OSError) as exc:
            raise _cache_error(self.path, exc) from None

    @staticmethod
    def key(
        spec: str, request: GenerationRequest, sample_index: int, namespace: str = "", fingerprint: str = ""
    ) -> str:
        """Cache key of one sample. ``namespace`` is the backend's ``cache_namespace`` (a revision of
        its sampling code), so a backend whose outputs change for the same request never serves
        samples drawn by its older self; ``fingerprint`` is the model's content fingerprint, so a
        changed model behind the same spec never does either."""
        blob = f"{spec}\x00{namespace}\x00{request.fingerprint()}\x00{sample_index}"
        if fingerprint:
            blob += f"\x00{fingerprint}"
        return hashlib.sha256(blob.encode()).hexdigest()

    def get_many(self, keys: Sequence[str]) -> dict[str, Completion]:
        out: dict[str, Completion] = {}
        with self._lock:
            try:
                for i in range(0, len(keys), 500):
                    chunk = list(keys[i : i + 500])
                    q = "SELECT key, value FROM responses WHERE key IN ({})".format(",".join("?" * len(chunk)))
                    for k, v in self._conn.execute(q, chunk):
                        comp = _decode(v)
                        if comp is not None:  # an unreadable entry is a miss, sampled again
                            out[k] = comp
            except sqlite3.Error as exc:
                raise _cache_error(self.path, exc) from None
        return out

    def put_many(self, items: Sequence[tuple[str, Completion]]) -> None:
        with self._lock:
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)",
                    [(k, json.dumps(c.to_dict())) for k, c in items],
                )
                self._conn.commit()
            except sqlite3.Error as exc:
                raise _cache_error(self.path, exc) from None

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self._conn.close()


def _decode(value: str) -> Completion | None:
    try:
        d: CompletionRecord = json.loads(value)  # what Completion.to_dict() stored, checked below
    except (ValueError, TypeError):
        return None
    if not isinstance(d, dict) or not isinstance(d.get("text"), str):
        return None
    return Completion.from_dict(d)


class CachedModel:
    """Wraps a backend; serves cached samples and asks the backend only for missing ones."""

    def __init__(self, inner: ChatModel, cache: ResponseCache) -> None:
        self.inner = inner
        self.cache = cache
        self.spec = inner.spec
        self.hits = 0
        self.misses = 0
        self._fingerprint: str | None = None

    def fingerprint(self) -> str:
        """The wrapped backend's content fingerprint (kept once verified; backends memoise their own)."""
        if self._fingerprint is None:
            from collapse_probe.core._identity import UNVERIFIED, model_fingerprint

            fp = model_fingerprint(self.inner)
            if fp.endswith(UNVERIFIED):
                return fp
            self._fingerprint = fp
        return self._fingerprint

    def __getattr__(self, name: str):  # noqa: ANN204 - delegate backend extras (score_choices, ...)
        return getattr(self.inner, name)

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        ns = str(getattr(self.inner, "cache_namespace", ""))
        fp = self.fingerprint()
        keys = [[self.cache.key(self.spec, r, r.first_sample + i, ns, fp) for i in range(r.n)] for r in requests]
        found = self.cache.get_many([k for ks in keys for k in ks])
        # For each request, ask for the contiguous range that covers its missing samples.
        todo: list[tuple[int, int, GenerationRequest]] = []
        for ri, (r, ks) in enumerate(zip(requests, keys, strict=True)):
            missing = [i for i, k in enumerate(ks) if k not in found]
            self.hits += r.n - len(missing)
            if missing:
                lo, hi = missing[0], missing[-1]
                todo.append((ri, lo, r.with_samples(r.first_sample + lo, hi - lo + 1)))
                self.misses += hi - lo + 1
        errors: dict[int, str] = {}
        if todo:
            metered = not getattr(self.inner, "reports_usage", False)
            if metered:
                check_budget(self.spec)
            results = await self.inner.generate([t[2] for t in todo])
            if metered:  # local and scripted backends: count what they know (requests, generated tokens)
                record_local_results(self.spec, (c for r in results for c in r.completions), len(todo))
            new: list[tuple[str, Completion]] = []
            from collapse_probe.models._http import secret_in_reply

            for (ri, lo, _sub), res in zip(todo, results, strict=True):
                leak = secret_in_reply(res.completions) if res.ok else None
                if not res.ok or leak is not None:
                    errors[ri] = res.error or f"{self.spec}: {leak}" or "unknown error"
                    continue
                for j, comp in enumerate(res.completions):
                    k = keys[ri][lo + j]
                    found[k] = comp
                    if not is_blank(comp.text, comp.tool_calls):  # no answer: the next run asks the model again
                        new.append((k, comp))
            if new:
                self.cache.put_many(new)
        out: list[GenerationResult] = []
        for ri, ks in enumerate(keys):
            if ri in errors:
                out.append(GenerationResult([], error=errors[ri]))
            else:
                out.append(GenerationResult([found[k] for k in ks]))
        return out
