"""``scripted:FILE.json`` — a seeded categorical model with a *known* response distribution.

Used for exact tests and calibration of the estimators, and usable as policy or simulator. File
format (other keys allowed)::

    {"responses": [{"text": "I'll give [DONATE $1]", "p": 0.5}, {"text": "No.", "p": 0.5}],
     "turns": [[{"text": "Hi", "p": 1.0}], [...]]}

``rules`` optionally makes the distribution react to the conversation, still with a known
distribution per situation: ``[{"if_contains": ["children", "kids"], "responses": [...]}, ...]``;
the first rule whose words (case-insensitive) occur in the last message of the other side picks
its response list, otherwise ``turns``/``responses`` apply. A scripted donor that gives more when the
persuader mentions children lets a trainer show real learning against a known reward function.

``turns`` optionally gives one list per turn index (the number of earlier assistant messages in the
history, i.e. this model's own turns so far); the last list repeats. Probabilities must sum to 1
(within 1e-6). An optional ``"delay_s"`` (seconds per ``generate`` call) emulates a slow backend for
resume and throughput tests.

A bare name that is not a file (``scripted:p4g_donor_diverse``) names one of the files shipped in
``collapse_probe/data/scripted/`` (``.json`` optional), so the demo specs work from any directory.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collapse_probe.core._identity import bytes_fingerprint
from collapse_probe.core.limits import MAX_DELAY_S
from collapse_probe.errors import ConfigError
from collapse_probe.models._options import ScriptedOptions
from collapse_probe.models._types import Completion, GenerationRequest, GenerationResult

Distribution = list[tuple[str, float]]

MAX_SCRIPTED_BYTES = 64 << 20
"""A scripted model lists its answers; a file past this size is not one."""


def _parse_dist(raw: Any, where: str) -> Distribution:
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"{where}: expected a non-empty list of {{'text': str, 'p': number}} objects")
    dist: Distribution = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or "text" not in item or "p" not in item:
            raise ConfigError(f"{where}[{i}]: expected an object with 'text' (string) and 'p' (number)")
        text, p = item["text"], item["p"]
        if not isinstance(text, str):
            raise ConfigError(f"{where}[{i}].text: expected a string, got {type(text).__name__}")
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not _finite(p) or p < 0:
            raise ConfigError(f"{where}[{i}].p: expected a probability >= 0, got {_short(p)}")
        dist.append((text, float(p)))
    total = sum(p for _, p in dist)
    if abs(total - 1.0) > 1e-6:
        raise ConfigError(f"{where}: probabilities sum to {total:.9g}, expected 1 (within 1e-6)")
    return dist


def _finite(x: float) -> bool:
    try:
        return math.isfinite(x)
    except OverflowError:  # an integer too large for a float
        return False


def _short(x: object) -> str:
    import reprlib

    return reprlib.repr(x)


@dataclass
class ScriptedSpec:
    """A parsed scripted-model file."""

    responses: Distribution
    turns: list[Distribution] = field(default_factory=list)
    delay_s: float = 0.0
    rules: list[tuple[tuple[str, ...], Distribution]] = field(default_factory=list)
    fingerprint: str = ""
    """SHA-256 of the file's bytes as parsed (the model's identity)."""


PACKAGED_DIR = Path(__file__).resolve().parents[1] / "data" / "scripted"
"""The scripted models shipped with the package (donors and persuaders of the P4G demo)."""


def packaged_scripted() -> list[str]:
    """Names of the shipped scripted models (``scripted:NAME`` works from any directory)."""
    return sorted(p.stem for p in PACKAGED_DIR.glob("*.json"))


def resolve_scripted_path(name: str | Path) -> Path:
    """``name`` as given when it is a file, else the shipped model of that name (``.json`` optional).

    A bare name (no directory part) that is neither is refused naming the shipped models it is closest
    to, or all of them.
    """
    import difflib

    p = Path(name)
    if p.exists() or len(p.parts) != 1:
        return p
    stem = p.name.removesuffix(".json")
    packaged = PACKAGED_DIR / f"{stem}.json"
    if packaged.is_file():
        return packaged
    shipped = packaged_scripted()
    close = difflib.get_close_matches(stem, shipped, n=2, cutoff=0.6)
    if close:
        raise ConfigError(
            f"scripted model file {str(p)!r} does not exist; did you mean "
            + " or ".join(f"'scripted:{c}'" for c in close)
            + " (shipped)?"
        )
    raise ConfigError(
        f"scripted model file {str(p)!r} does not exist (a path to a JSON file, or a shipped model: "
        + ", ".join(f"scripted:{c}" for c in shipped)
        + ")"
    )


def load_scripted(path: str | Path) -> ScriptedSpec:
    """Parse and validate a scripted-model file; errors name the file and field."""
    from collapse_probe.core._files import FileProblem, MissingFile, parse_json, read_bytes

    p = resolve_scripted_path(path)
    what = "a scripted model's JSON file"
    try:
        raw = read_bytes(p, max_bytes=MAX_SCRIPTED_BYTES, expected=what)
    except MissingFile:
        raise ConfigError(f"scripted model file {str(p)!r} does not exist") from None
    except FileProblem as exc:
        raise ConfigError(f"scripted model file {exc}") from None
    data = parse_json(raw, p, expected=what)
    if not isinstance(data, dict) or "responses" not in data:
        raise ConfigError(f"{p}: expected a JSON object with a 'responses' list")
    responses = _parse_dist(data["responses"], f"{p}: field 'responses'")
    turns: list[Distribution] = []
    if "turns" in data:
        if not isinstance(data["turns"], list) or not data["turns"]:
            raise ConfigError(f"{p}: field 'turns' must be a non-empty list of response lists")
        turns = [_parse_dist(t, f"{p}: field 'turns[{i}]'") for i, t in enumerate(data["turns"])]
    rules: list[tuple[tuple[str, ...], Distribution]] = []
    if "rules" in data:
        if not isinstance(data["rules"], list):
            raise ConfigError(f"{p}: field 'rules' must be a list of {{'if_contains': [...], 'responses': [...]}}")
        for i, rule in enumerate(data["rules"]):
            words = rule.get("if_contains") if isinstance(rule, dict) else None
            if isinstance(words, str):
                words = [words]
            if not isinstance(words, list) or not words or not all(isinstance(w, str) and w for w in words):
                raise ConfigError(f"{p}: field 'rules[{i}].if_contains' must be a non-empty list of strings")
            rules.append(
                (
                    tuple(w.casefold() for w in words),
                    _parse_dist(rule.get("responses"), f"{p}: field 'rules[{i}].responses'"),
                )
            )
    delay = data.get("delay_s", 0.0)
    if isinstance(delay, bool) or not isinstance(delay, (int, float)) or delay < 0:
        raise ConfigError(f"{p}: field 'delay_s' must be a number of seconds >= 0, got {_short(delay)}")
    if not _finite(delay) or delay > MAX_DELAY_S:
        raise ConfigError(
            f"{p}: field 'delay_s' must be a number of seconds in [0, {MAX_DELAY_S:g}], got {_short(delay)}"
        )
    return ScriptedSpec(responses, turns, float(delay), rules, fingerprint=bytes_fingerprint(raw))


class ScriptedModel:
    """A categorical model over fixed texts; sample ``i`` is drawn with ``derive_seed(seed, i)``."""

    def __init__(
        self,
        spec: str,
        responses: Distribution,
        turns: list[Distribution] | None = None,
        delay_s: float = 0.0,
        rules: list[tuple[tuple[str, ...], Distribution]] | None = None,
        fingerprint: str | None = None,
    ) -> None:
        self.spec = spec
        self._fingerprint = fingerprint
        self.responses = responses
        self.turns = turns or []
        self.delay_s = delay_s
        self.rules = rules or []

    def fingerprint(self) -> str:
        """SHA-256 of the file this model was parsed from (of its distributions when built in code)."""
        if self._fingerprint:
            return self._fingerprint
        blob = json.dumps([self.responses, self.turns, self.rules, self.delay_s], default=list)
        return bytes_fingerprint(blob.encode())

    def distribution(self, request: GenerationRequest) -> Distribution:
        """The exact response distribution this model samples from for ``request``."""
        if self.rules:
            last = next((m for m in reversed(request.messages) if m.get("role") == "user"), None)
            text = str(last.get("content") or "").casefold() if last else ""
            for words, dist in self.rules:
                if any(w in text for w in words):
                    return dist
        if not self.turns:
            return self.responses
        turn = sum(1 for m in request.messages if m.get("role") == "assistant")
        return self.turns[min(turn, len(self.turns) - 1)]

    def _sample(self, dist: Distribution, rng: random.Random) -> str:
        u = rng.random()
        acc = 0.0
        for text, p in dist:
            acc += p
            if u < acc:
                return text
        return next(t for t, p in reversed(dist) if p > 0)

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        out = []
        for r in requests:
            dist = self.distribution(r)
            comps = []
            for i in range(r.n):
                seed = r.sample_seed(i)
                rng = random.Random(seed) if seed is not None else random.Random()
                if r.params.temperature == 0:
                    text = max(dist, key=lambda tp: tp[1])[0]
                else:
                    text = self._sample(dist, rng)
                p = sum(q for t, q in dist if t == text)
                comps.append(
                    Completion(
                        text=text, token_logprobs=[math.log(p)] if r.params.logprobs else None, finish_reason="stop"
                    )
                )
            out.append(GenerationResult(comps))
        return out

    async def score_choices(self, request: GenerationRequest, choices: Sequence[str]) -> list[float]:
        """Exact log-probability of each choice as the whole response (``-inf`` if impossible)."""
        dist = self.distribution(request)
        res = []
        for c in choices:
            p = sum(q for t, q in dist if t == c)
            res.append(math.log(p) if p > 0 else float("-inf"))
        return res


def make_scripted_model(spec: str, name: str, **options: Any) -> ScriptedModel:
    """Factory for ``scripted:<file>``; the only option is ``delay_s`` (seconds in [0, :data:`~collapse_probe.core.limits.MAX_DELAY_S`]).

    Raises:
        ConfigError: an unknown option or a bad value, naming it and what is allowed.
    """
    opts = ScriptedOptions.parse(options, spec)
    parsed = load_scripted(name)
    delay = parsed.delay_s if opts.delay_s is None else float(opts.delay_s)
    return ScriptedModel(spec, parsed.responses, parsed.turns, delay, parsed.rules, fingerprint=parsed.fingerprint)
