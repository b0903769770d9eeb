"""Calibrating the embedding threshold: the shipped labelled reply pairs and paraphrase sets, and the
balanced-accuracy search over cosine distances."""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NotRequired, TypedDict

import numpy as np

from collapse_probe.core._meaning import KeyFamily
from collapse_probe.core._resources import package_path
from collapse_probe.errors import ConfigError
from collapse_probe.metrics.partitioners._embedding import DEFAULT_EMBEDDING_THRESHOLD, EmbeddingPartitioner

CALIBRATION_PAIRS = package_path("data", "calibration", "paraphrase_pairs.jsonl")
"""The shipped labelled paraphrase / different-meaning reply pairs used to calibrate the threshold."""
PARAPHRASE_SETS = package_path("data", "calibration", "paraphrase_sets.jsonl")
"""Shipped sets of replies, four paraphrases of each of four meanings, split into ``calibration``
(with :data:`CALIBRATION_PAIRS`, for the threshold) and ``heldout`` (for checking it)."""


@dataclass(frozen=True)
class ThresholdCalibration:
    """Result of :func:`calibrate_threshold`."""

    threshold: float
    """Cosine-distance threshold: pairs closer than this are called paraphrases."""
    balanced_accuracy: float
    """Mean of the true-paraphrase and true-different rates at ``threshold``."""
    n_pairs: int
    n_same: int
    distances: tuple[float, ...]
    """Cosine distance of each pair, in input order."""


def best_threshold(distances: Sequence[float], same: Sequence[bool]) -> tuple[float, float]:
    """Threshold on distance that best separates ``same`` pairs (small distance) from different ones.

    Every midpoint between consecutive sorted distances is a candidate; the score is balanced
    accuracy (pairs with distance < threshold are predicted "same"). Among equally good thresholds
    the midpoint of the widest optimal gap is returned, so the choice is not at the edge of a tie.

    Returns:
        ``(threshold, balanced_accuracy)``.

    Example:
        >>> best_threshold([0.1, 0.2, 0.5, 0.7], [True, True, False, False])
        (0.35, 1.0)
    """
    d = np.asarray(distances, dtype=np.float64)
    y = np.asarray(same, dtype=bool)
    if d.ndim != 1 or d.size != y.size or d.size == 0:
        raise ConfigError("distances and same must be equally long, non-empty lists")
    if y.all() or not y.any():
        raise ConfigError("calibration needs both paraphrase (same) and different-meaning pairs")
    s = np.unique(d)
    cands = np.concatenate([[s[0] - 1e-6], (s[:-1] + s[1:]) / 2, [s[-1] + 1e-6]])
    pred = d[None, :] < cands[:, None]
    tpr = (pred & y).sum(1) / y.sum()
    tnr = (~pred & ~y).sum(1) / (~y).sum()
    bacc = (tpr + tnr) / 2
    best = np.flatnonzero(np.isclose(bacc, bacc.max()))
    # widest gap among optimal candidates: gap width around candidate i is s[i] - s[i-1]
    edges = np.concatenate([[s[0]], s, [s[-1]]])
    widths = edges[best + 1] - edges[best]
    i = int(best[int(np.argmax(widths))])
    return float(round(cands[i], 6)), float(bacc[i])


class ParaphrasePair(TypedDict):
    """A labelled reply pair: ``same`` when ``a`` and ``b`` mean the same."""

    a: str
    b: str
    same: bool
    set: NotRequired[str]
    """The paraphrase set both replies come from (:func:`paraphrase_set_pairs`)."""


class ParaphraseSet(TypedDict):
    """One line of the paraphrase sets: replies grouped by meaning."""

    set: str
    """The set's name (its line number when the line names none)."""
    split: str
    """``calibration``, ``heldout`` or empty."""
    meanings: list[list[str]]
    """One list of replies per meaning."""


def load_paraphrase_pairs(path: str | Path = CALIBRATION_PAIRS) -> list[ParaphrasePair]:
    """Read labelled pairs: JSON lines ``{"a": str, "b": str, "same": bool}`` (other keys allowed)."""
    return [_check_pair(rec, where) for where, rec in _calibration_records(path, "paraphrase pairs")]


def _calibration_records(path: str | Path, what: str) -> list[tuple[str, object]]:
    """``(file:line, parsed JSON)`` for every non-blank line of a calibration JSONL file."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{what} file {str(p)!r} does not exist")
    out: list[tuple[str, object]] = []
    for lineno, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((f"{p}:{lineno}", json.loads(line)))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{p}:{lineno}: not valid JSON ({exc.msg})") from None
    return out


def _check_pair(rec: object, where: str) -> ParaphrasePair:
    if isinstance(rec, Mapping):
        a, b, same = rec.get("a"), rec.get("b"), rec.get("same")
    elif isinstance(rec, Sequence) and len(rec) == 3:
        a, b, same = rec
    else:
        raise ConfigError(f"{where}: expected {{'a': str, 'b': str, 'same': bool}} or (a, b, same)")
    if not isinstance(a, str) or not isinstance(b, str) or not isinstance(same, bool):
        raise ConfigError(f"{where}: fields 'a' and 'b' must be strings and 'same' a boolean")
    return {"a": a, "b": b, "same": same}


def paraphrase_set_pairs(split: str | None = None, path: str | Path = PARAPHRASE_SETS) -> list[ParaphrasePair]:
    """Labelled pairs from the shipped paraphrase sets: every two replies of one meaning are a
    paraphrase pair (``same``), every two replies of different meanings of one set are not.

    Args:
        split: ``"calibration"``, ``"heldout"`` or ``None`` for both.
        path: JSONL of ``{"set": str, "split": str, "meanings": [[reply, ...], ...]}``.
    """
    pairs: list[ParaphrasePair] = []
    for rec in load_paraphrase_sets(path):
        if split is not None and rec["split"] != split:
            continue
        flat = [(i, t) for i, group in enumerate(rec["meanings"]) for t in group]
        for x in range(len(flat)):
            for y in range(x + 1, len(flat)):
                pairs.append({"a": flat[x][1], "b": flat[y][1], "same": flat[x][0] == flat[y][0], "set": rec["set"]})
    return pairs


def load_paraphrase_sets(path: str | Path = PARAPHRASE_SETS) -> list[ParaphraseSet]:
    """Read paraphrase sets: JSON lines ``{"set", "split", "meanings": [[reply, ...], ...]}``."""
    out: list[ParaphraseSet] = []
    for where, rec in _calibration_records(path, "paraphrase sets"):
        fields = rec if isinstance(rec, dict) else {}
        groups = fields.get("meanings")
        if not isinstance(groups, list) or not all(
            isinstance(g, list) and g and all(isinstance(t, str) for t in g) for g in groups
        ):
            raise ConfigError(f"{where}: field 'meanings' must be a list of non-empty lists of strings")
        lineno = where.rsplit(":", 1)[1]
        meanings = [[str(t) for t in g] for g in groups if isinstance(g, list)]
        out.append({"set": str(fields.get("set", lineno)), "split": str(fields.get("split", "")), "meanings": meanings})
    return out


def _pair_keys(key: Callable[[str], Hashable | None] | None, a: str, b: str) -> bool | None:
    """What the key alone says of a pair: ``True`` (same decision), ``False`` (different keys) or
    ``None`` (the distance decides), as :class:`EmbeddingPartitioner` uses it."""
    if key is None:
        return None
    ka, kb = key(a), key(b)
    if ka is None or kb is None:
        return None
    if ka != kb:
        return False
    return None if isinstance(ka, KeyFamily) else True


def pair_balanced_accuracy(
    distances: Sequence[float],
    same: Sequence[bool],
    threshold: float,
    decided: Sequence[bool | None] | None = None,
) -> float:
    """Balanced accuracy of "same meaning" predictions on labelled pairs: a pair is predicted
    ``decided[i]`` where that is not ``None`` (a key's verdict), else ``distance < threshold``."""
    d = np.asarray(distances, dtype=np.float64)
    y = np.asarray(same, dtype=bool)
    pred = d < threshold
    if decided is not None:
        for i, v in enumerate(decided):
            if v is not None:
                pred[i] = v
    tpr = float((pred & y).sum() / max(1, y.sum()))
    tnr = float((~pred & ~y).sum() / max(1, (~y).sum()))
    return (tpr + tnr) / 2


def calibrate_threshold(
    pairs: Iterable[Mapping[str, object] | Sequence[object]] | str | Path = CALIBRATION_PAIRS,
    model: str | None = None,
    device: str | None = None,
    key: Callable[[str], Hashable | None] | None = None,
) -> ThresholdCalibration:
    """Calibrate the :class:`EmbeddingPartitioner` cosine threshold on labelled reply pairs.

    Procedure: embed both replies of every pair with the encoder (unit-norm), take the cosine
    distance 1 − cos, and choose the threshold that maximises balanced accuracy of "distance <
    threshold ⇔ same meaning" (:func:`best_threshold`). With ``key``, the pairs the key decides on
    its own (both replies keyed: same decision or different ones) are predicted by the key, as the
    partitioner does, and the threshold is chosen on the remaining pairs; the balanced accuracy
    reported is over all pairs. The shipped pairs are persuadee-style replies to a donation request
    written for this purpose: paraphrases (same decision, same content, different wording) and
    different meanings, including hard negatives that share most words but differ in decision
    ("I'd be happy to donate" vs "I'd be happy to hear more, but I won't donate").

    Args:
        pairs: a JSONL path or an iterable of ``{"a", "b", "same"}`` mappings / ``(a, b, same)``
            tuples; defaults to the shipped :data:`CALIBRATION_PAIRS`.
        model: encoder directory (``None``: packaged all-MiniLM-L6-v2).
        device: torch device.
        key: the decision key the partitioner will use (e.g. an arena's ``meaning_key``).
    """
    if isinstance(pairs, (str, Path)):
        recs = load_paraphrase_pairs(pairs)
    else:
        recs = [_check_pair(r, f"pairs[{i}]") for i, r in enumerate(pairs)]
    if not recs:
        raise ConfigError("pairs: no calibration pairs")
    part = EmbeddingPartitioner(model=model, device=device)
    ea = part.embed([r["a"] for r in recs])
    eb = part.embed([r["b"] for r in recs])
    dist = 1.0 - np.sum(ea * eb, axis=1)
    same = [r["same"] for r in recs]
    decided = [_pair_keys(key, r["a"], r["b"]) for r in recs]
    free = [i for i, v in enumerate(decided) if v is None]
    fs = [same[i] for i in free]
    if free and any(fs) and not all(fs):
        thr, _ = best_threshold([float(dist[i]) for i in free], fs)
    else:
        thr = DEFAULT_EMBEDDING_THRESHOLD
    bacc = pair_balanced_accuracy(dist.tolist(), same, thr, decided)
    return ThresholdCalibration(thr, bacc, len(recs), int(sum(same)), tuple(float(x) for x in dist))
