"""Verbalized Sampling (VS): ask the simulator for K candidate responses with verbalized
probabilities, then sample one of them.

A collapsed simulator puts almost all of its *token-level* mass on one modal reply. Asked instead to
write down several replies a person might give, with how likely each is, the same model spreads its
answer over the candidates it can think of; sampling from those verbalized probabilities restores
diversity without training (the inference-time fix of DESIGN.md).

The prompt asks for numbered lines ``1. (p=0.40) reply text``. For completion-style (transcript)
decoding the prompt ends with the primed start of the first line, ``1. (p=``, which keeps small
local models in format; :func:`choose_verbalized` accepts such a completion that starts inside the
primed line. It also accepts JSON (a list of ``{"text", "probability"}`` objects, ``{"responses":
[...]}``, ``[[text, p], ...]`` or ``{text: p}``), code fences, other list markers and the labelled
probability after the text (``text (p=0.4)``). Probabilities are read only from that documented
field (``p=``, ``prob=``, ``probability:``; JSON: the probability key): a bare number in a line is
never a probability. Probabilities that do not sum to 1 are renormalised; NaN, negative or missing
ones are repaired (see :func:`choose_verbalized`); when none is readable the turn is a failure.
When no usable list is found the turn falls back to the first non-empty line (or the raw text) and
the failure is *counted*: ``parse_ok`` is False and ``failure_reason`` says why; the audit reports
the failure rate.
"""

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict

from collapse_probe.core._constraints import Integer, check_value
from collapse_probe.core.limits import MAX_VS_K

VS_PRIME = "1. (p="
"""The primed start of the first candidate line at the end of a transcript prompt."""

CANDIDATE_OVERHEAD_TOKENS = 12
"""Tokens per candidate for the ``N. (p=0.xx)`` prefix and the line break."""

_TEXT_KEYS = ("text", "response", "reply", "candidate", "content", "message", "utterance")
_PROB_KEYS = ("probability", "p", "prob", "likelihood", "weight", "confidence")


def check_vs_k(k: object) -> None:
    """Refuse a number of Verbalized-Sampling candidates below 2 (one line naming ``--vs-k``)."""
    check_value(k, "--vs-k", [Integer(2, why="Verbalized Sampling needs at least 2 candidates", most=MAX_VS_K)])


class ChoiceRecord(TypedDict):
    """A Verbalized Sampling turn as the conversation log keeps it (a message's ``meta.vs``)."""

    candidates: list[str]
    probs: list[float]
    raw_probs: list[float | None]
    chosen: int | None
    parse_ok: bool
    failure_reason: str | None
    issues: list[str]
    format: str | None
    """``json``, ``lines`` or ``None``."""


@dataclass
class VSChoice:
    """The outcome of one Verbalized-Sampling turn."""

    text: str
    """The sampled candidate (or the fallback text when parsing failed)."""
    candidates: list[str]
    """Candidate texts in the order the model wrote them (at most K)."""
    probs: list[float]
    """Normalised sampling probabilities of ``candidates`` (sum to 1)."""
    parse_ok: bool
    """False when no usable candidate list was found; the turn then used a fallback."""
    failure_reason: str | None = None
    """Why parsing failed (``None`` when ``parse_ok``)."""
    chosen: int | None = None
    """Index of the sampled candidate."""
    raw_probs: list[float | None] = field(default_factory=list)
    """The probabilities as written (``None`` where missing or unreadable)."""
    issues: list[str] = field(default_factory=list)
    """Repairs that did not make the turn a failure (renormalised, a missing probability, ...)."""
    fmt: str | None = None
    """Which format was parsed: ``"json"``, ``"lines"`` or ``None``."""

    def to_record(self) -> ChoiceRecord:
        """A JSON-serialisable record for the conversation log."""
        return ChoiceRecord(
            candidates=self.candidates,
            probs=[round(p, 6) for p in self.probs],
            raw_probs=[None if p is None or not math.isfinite(p) else p for p in self.raw_probs],
            chosen=self.chosen,
            parse_ok=self.parse_ok,
            failure_reason=self.failure_reason,
            issues=self.issues,
            format=self.fmt,
        )


# ----------------------------------------------------------------------------------------------- prompt


def vs_instruction(k: int, speaker: str | None = None) -> str:
    """The instruction that asks for ``k`` candidates with verbalized probabilities."""
    who = f"the {speaker}" if speaker else "you"
    return (
        f"Instead of a single reply, write {k} different replies {who} might plausibly give next, as different "
        f"real people in this situation would, each with its probability (the probabilities sum to 1). "
        f"Write exactly one candidate per line in this format, and nothing else:\n"
        f"1. (p=0.40) first reply\n2. (p=0.35) second reply\n... up to {k}."
    )


def verbalized_prompt(prompt: Any, k: int) -> Any:
    """Rewrite a :class:`~collapse_probe.benchmarks.TurnPrompt` to ask for ``k`` verbalized candidates.

    - Chat view: the instruction is appended to the system message (one is added if there is none),
      so the alternation of user and assistant turns stays intact.
    - Transcript view: the transcript keeps the dialogue; its final speaker tag (``"Persuadee:"``)
      is replaced by the instruction and the primed first line :data:`VS_PRIME`.
    - ``max_tokens`` becomes ``k * (max_tokens + CANDIDATE_OVERHEAD_TOKENS)`` so K candidates fit.
    - Stop strings that would cut the list are dropped: any stop that is only whitespace
      (``"\\n"``), and speaker tags (``"Persuader:"``) are kept only at the start of a line
      (``"\\nPersuader:"``), so a model that returns to writing the dialogue is still stopped.

    Args:
        prompt: the turn prompt of the direct mode.
        k: number of candidates (>= 2).

    Raises:
        ConfigError: ``k`` < 2.
    """
    check_vs_k(k)
    speaker = None
    new_prompt = prompt.prompt
    if new_prompt is not None:
        body, _, last = new_prompt.rstrip().rpartition("\n")
        tag = last.strip()
        if body and tag.endswith(":") and 0 < len(tag) <= 40 and " " not in tag[:-1].strip():
            speaker = tag[:-1].strip()
        else:
            body = new_prompt.rstrip()
        new_prompt = f"{body}\n\n{vs_instruction(k, speaker)}\n\n{VS_PRIME}"
    messages = [dict(m) for m in prompt.messages]
    instruction = vs_instruction(k)
    if messages and messages[0].get("role") == "system":
        messages[0]["content"] = f"{messages[0].get('content') or ''}\n\n{instruction}".strip()
    else:
        messages.insert(0, {"role": "system", "content": instruction})
    stops: list[str] = []
    for s in prompt.stop:
        if not s or not s.strip():
            continue
        line_start = s if s.startswith("\n") else "\n" + s
        if line_start not in stops:
            stops.append(line_start)
    return replace(
        prompt,
        messages=messages,
        prompt=new_prompt,
        stop=tuple(stops),
        max_tokens=k * (prompt.max_tokens + CANDIDATE_OVERHEAD_TOKENS),
    )


# ----------------------------------------------------------------------------------------------- parsing

_FENCE_RE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)(?:```|\Z)", re.DOTALL)
_NUM = r"(?:\d+(?:\.\d*)?|\.\d+)"
_PNUM = r"(?:-?\d+(?:\.\d*)?|-?\.\d+|nan)"  # inside an explicit probability marker: NaN and negatives too
_PROB = r"(?:p(?:rob(?:ability)?)?|likelihood|weight)"
_MARKER_RE = re.compile(
    r"^\s*(?:(?:candidate|response|reply|option)\s*)?(?:[-*•]|\(?\d{1,2}\s*[.):\]]|\d{1,2}\s+-)\s*", re.I
)
# Probabilities are read only from the documented field, a number labelled p= (or prob=,
# probability:), in brackets or not: "(p=0.4) text", "p=0.4: text", "text (p=0.4)". A bare number
# ("[0.4] text", "(2) text", "text, 2", "40%: text") is not a probability: in "1. I can donate, 2"
# it is part of the reply or a list marker, and reading it as 2 % would invent a distribution.
_LEAD_RE = re.compile(
    rf"^(?:[(\[]\s*{_PROB}\s*[=:]?\s*({_PNUM})\s*(%)?\s*[)\]]\s*[:\-–—|,]?"
    rf"|{_PROB}\s*[=:]\s*({_PNUM})\s*(%)?\s*[:\-–—|,)]?)"
    r"\s*(.*)$",
    re.I,
)
_TRAIL_RE = re.compile(
    rf"^(.*?)\s*(?:[(\[]\s*{_PROB}\s*[=:]?\s*({_PNUM})\s*(%)?\s*[)\]]|[-–—|:,]?\s*{_PROB}\s*[=:]\s*({_PNUM})\s*(%)?)\s*\.?$",
    re.I,
)
# a candidate that only points at another one ("third reply", "Reply 3", "option #2"): a tiny
# model's pick among candidates it did not write, not a reply
_REFERENCE_RE = re.compile(
    r"^(?:the\s+)?(?:(?:first|second|third|fourth|fifth|sixth|last|\d+(?:st|nd|rd|th))\s+(?:reply|response|option|"
    r"candidate|answer|one)|(?:reply|response|option|candidate|answer)\s*(?:#|no\.?\s*)?\d+)\s*[.!]?$",
    re.I,
)
# a completion that starts inside the primed line "1. (p=": "0.40) text"
# (a bare integer followed by ")" is a list marker, "1) text", not a probability)
_PRIMED_RE = re.compile(r"^\s*(-?\d*\.\d+|nan|\d+(?=\s*%))\s*(%)?\s*\)\s*(.*)$", re.I)


def _to_prob(value: str | None, percent: bool) -> float | None:
    if value is None:
        return None
    try:
        v = float(value)
    except ValueError:
        return None
    return v / 100.0 if percent else v


def _clean_text(t: str) -> str:
    t = t.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'“”":
        t = t[1:-1].strip()
    if len(t) >= 2 and t[0] in '“"' and t[-1] in '”"':
        t = t[1:-1].strip()
    return t


def _parse_json(text: str) -> list[tuple[str, float | None]] | None:
    """Candidates from a JSON answer, or ``None`` if the text holds no usable JSON."""
    starts = [i for i in (text.find("["), text.find("{")) if i >= 0]
    if not starts:
        return None
    start = min(starts)
    end = max(text.rfind("]"), text.rfind("}"))
    if end <= start:
        return None
    try:
        data = json.loads(text[start : end + 1])
    except (json.JSONDecodeError, ValueError):
        return None
    if isinstance(data, dict):
        for key in ("responses", "candidates", "replies", "options", "answers"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
        else:
            if (
                data
                and all(isinstance(k, str) for k in data)
                and all(isinstance(v, (int, float, str)) or v is None for v in data.values())
            ):
                return [(_clean_text(k), _json_prob(v)) for k, v in data.items()]
            return None
    if not isinstance(data, list):
        return None
    out: list[tuple[str, float | None]] = []
    for item in data:
        if isinstance(item, dict):
            t = next((item[k] for k in _TEXT_KEYS if isinstance(item.get(k), str)), None)
            p = next((item[k] for k in _PROB_KEYS if k in item), None)
            if t is not None:
                out.append((_clean_text(t), _json_prob(p)))
        elif isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str):
            out.append((_clean_text(item[0]), _json_prob(item[1])))
        elif isinstance(item, str):
            out.append((_clean_text(item), None))
    return out or None


def _json_prob(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        s = v.strip()
        pct = s.endswith("%")
        try:
            return float(s.rstrip("%").strip()) / (100.0 if pct else 1.0)
        except ValueError:
            return float("nan")
    return None


def _parse_line(line: str, primed: bool) -> tuple[str, float | None] | None:
    """One candidate from one line, or ``None`` if the line is not a candidate."""
    if primed:
        m = _PRIMED_RE.match(line)
        if m:
            return _clean_text(m.group(3)), _to_prob(m.group(1), bool(m.group(2)))
    marker = _MARKER_RE.match(line)
    rest = line[marker.end() :] if marker else line.strip()
    m = _LEAD_RE.match(rest)
    if m and m.group(5).strip():
        if m.group(1) is not None:
            p = _to_prob(m.group(1), bool(m.group(2)))
        else:
            p = _to_prob(m.group(3), bool(m.group(4)))
        return _clean_text(m.group(5)), p
    m = _TRAIL_RE.match(rest)
    if m and m.group(1).strip():
        value, pct = (m.group(2), m.group(3)) if m.group(2) is not None else (m.group(4), m.group(5))
        return _clean_text(m.group(1)), _to_prob(value, bool(pct))
    if marker and rest.strip():
        return _clean_text(rest), None  # a numbered candidate without a probability
    return None


def _parse_lines(text: str) -> list[tuple[str, float | None]]:
    out = []
    for i, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        cand = _parse_line(line, primed=i == 0)
        if cand is not None and cand[0]:
            out.append(cand)
    return out


def _unfence(text: str) -> str:
    blocks = _FENCE_RE.findall(text)
    inner = [b for b in blocks if b.strip()]
    return "\n".join(inner) if inner else text


def _fallback(text: str, reason: str, issues: list[str], rng: random.Random) -> VSChoice:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    fallback = _clean_text(_MARKER_RE.sub("", lines[0], count=1)) if lines else text.strip()
    return VSChoice(
        fallback,
        [fallback] if fallback else [],
        [1.0] if fallback else [],
        False,
        reason,
        chosen=0 if fallback else None,
        raw_probs=[None] if fallback else [],
        issues=issues,
    )


def _sample(probs: list[float], rng: random.Random) -> int:
    u = rng.random()
    acc = 0.0
    for i, p in enumerate(probs):
        acc += p
        if u < acc:
            return i
    return max(i for i, p in enumerate(probs) if p > 0)


def choose_verbalized(text: str, k: int, rng: random.Random) -> VSChoice:
    """Parse a Verbalized-Sampling completion and sample one candidate by its probability.

    Rules (each repair is listed in ``issues``; each failure sets ``parse_ok=False``):

    - Code fences are unwrapped; JSON is tried first, then one candidate per line.
    - Probabilities come only from the labelled field (``(p=0.4)``, ``p=0.4:``, ``text (p=0.4)``;
      JSON: the probability key); ``p=40%`` is 0.4 and a ``p=`` value in (1, 100] without ``%`` is
      read as a percentage. Bare numbers (``[0.4] a``, ``(2) a``, ``a, 2``) are not probabilities.
    - Candidates that only point at another reply ("third reply", "Reply 3") are dropped.
    - More than ``k`` candidates: the first ``k`` are kept. Fewer than ``k`` but at least 2: kept.
    - NaN, negative or missing probabilities are repaired: they share the mass the valid ones leave
      (1 − Σ valid) equally, or get the mean valid probability when nothing is left.
    - The probabilities are renormalised to sum to 1.

    Failures (the turn falls back, the failure is counted by the caller):

    - ``"empty output"``: nothing but whitespace. The turn's text is empty.
    - ``"no candidate list found"``: no line or JSON item looked like a candidate. The turn's text is
      the first non-empty line.
    - ``"too few candidates (1 of K)"``: a single candidate is no distribution to sample from. The
      turn's text is that candidate.
    - ``"no valid probabilities"`` / ``"probabilities sum to 0"``: candidates parsed but no usable
      probability; one is drawn *uniformly* over what parsed.
    - ``"a pick among replies, not replies"``: the completion (or every candidate) only names a
      reply ("third reply"). The turn's text is empty.

    Args:
        text: the raw completion.
        k: the number of candidates asked for.
        rng: the turn's random generator (the draw is reproducible from it).
    """
    check_value(k, "k", [Integer(1)])
    issues: list[str] = []
    if not text or not text.strip():
        return VSChoice("", [], [], False, "empty output")
    if _REFERENCE_RE.match(_clean_text(_MARKER_RE.sub("", text.strip(), count=1))):
        return VSChoice("", [], [], False, "a pick among replies, not replies")
    body, parsed, fmt = _candidates(text, issues)
    if parsed is None:
        return VSChoice("", [], [], False, "a pick among replies, not replies", issues=issues)
    if not parsed:
        return _fallback(body, "no candidate list found", issues, rng)
    if len(parsed) > k:
        issues.append(f"{len(parsed)} candidates for k={k}: kept the first {k}")
        parsed = parsed[:k]
    if len(parsed) < 2:
        choice = _fallback(parsed[0][0], f"too few candidates (1 of {k})", issues, rng)
        choice.raw_probs = [parsed[0][1]]
        choice.fmt = fmt
        return choice
    if len(parsed) < k:
        issues.append(f"too few candidates ({len(parsed)} of {k})")
    texts = [t for t, _ in parsed]
    raw = [p for _, p in parsed]
    probs = _repaired_probabilities(raw, issues)
    if probs is None:
        reason = "no valid probabilities"
        uniform = [1.0 / len(texts)] * len(texts)
        idx = _sample(uniform, rng)
        return VSChoice(texts[idx], texts, uniform, False, reason, idx, raw, issues, fmt)
    total = float(sum(probs))
    if total <= 0:
        uniform = [1.0 / len(texts)] * len(texts)
        idx = _sample(uniform, rng)
        return VSChoice(texts[idx], texts, uniform, False, "probabilities sum to 0", idx, raw, issues, fmt)
    if abs(total - 1.0) > 1e-3:
        issues.append(f"probabilities summed to {total:.3g}: renormalised")
    norm = [float(p) / total for p in probs]
    idx = _sample(norm, rng)
    return VSChoice(texts[idx], texts, norm, True, None, idx, raw, issues, fmt)


def _candidates(text: str, issues: list[str]) -> tuple[str, list[tuple[str, float | None]] | None, str]:
    """``(body, candidates, format)``: the completion without code fences, its ``(text, probability)``
    candidates (JSON first, else one per line; those that only point at another reply dropped; ``None``
    when every candidate was such a pointer) and ``"json"`` or ``"lines"``; repairs go to ``issues``."""
    body = _unfence(text)
    if body is not text:
        issues.append("code fence removed")
    parsed = _parse_json(body)
    fmt = "json"
    if parsed is None:
        parsed = _parse_lines(body)
        fmt = "lines"
    parsed = [(t, p) for t, p in parsed if t]
    references = [t for t, _ in parsed if _REFERENCE_RE.match(t)]
    if references:
        parsed = [(t, p) for t, p in parsed if not _REFERENCE_RE.match(t)]
        issues.append(f"{len(references)} candidate(s) only point at another reply ({references[0]!r}): dropped")
        if not parsed:
            return body, None, fmt
    return body, parsed, fmt


def _repaired_probabilities(raw: list[float | None], issues: list[str]) -> list[float] | None:
    """The candidates' probabilities with a percentage read as one and NaN, negative or missing ones
    sharing what the valid ones leave (each repair listed in ``issues``); ``None`` when none is valid."""
    probs: list[float | None] = []
    for p in raw:
        if p is not None and math.isfinite(p) and 1.0 < p <= 100.0:
            issues.append(f"probability {p:g} read as {p:g}%")
            p = p / 100.0
        probs.append(p if p is not None and math.isfinite(p) and p >= 0 else None)
    n_bad = sum(1 for p in probs if p is None)
    valid = [p for p in probs if p is not None]
    if not valid:
        return None
    if n_bad:
        bad_kinds = sorted(
            {
                "missing" if r is None else "NaN" if math.isnan(r) else "negative"
                for r, p in zip(raw, probs, strict=True)
                if p is None
            }
        )
        left = 1.0 - sum(valid)
        fill = left / n_bad if left > 1e-9 else sum(valid) / len(valid)
        issues.append(f"{n_bad} {'/'.join(bad_kinds)} probabilit{'y' if n_bad == 1 else 'ies'} repaired")
    else:
        fill = 0.0
    return [fill if p is None else p for p in probs]
