"""What a P4G donor says, read off the text: donation tags, amounts in words, the decision label the
reward reads, and the human dialogues of the official data.

Shared by the arena (:mod:`~collapse_probe.benchmarks.p4g`) and the stance reader
(:mod:`~collapse_probe.benchmarks.p4g.stance`), which the arena uses as its meaning key; both import
this module and the arena imports the reader, never the other way round.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic import JsonValue

MAX_DONATION = 2.0


_AMOUNT = r"(\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d+(?:\.\d*)?|\.\d+)"
_DONATE = re.compile(
    r"\[\s*donate\s*:?\s*(?:(?:usd|us\$)\s*)?\$?\s*" + _AMOUNT + r"\s*(?:usd|dollars?)?\s*\]", re.IGNORECASE
)


def parse_donation(text: str) -> float | None:
    """Donation amount from the last ``[DONATE $N]`` tag in ``text``; ``None`` if there is none.

    Accepted (case-insensitive, spaces anywhere inside the brackets): ``[DONATE $1]``,
    ``[DONATE $1.50]``, ``[donate 1.5]``, ``[DONATE: $0]``, ``[DONATE $.50]``, ``[DONATE $1,000]``,
    ``[DONATE 2 dollars]``. A tag whose amount is not a non-negative number (``[DONATE $-1]``,
    ``[DONATE $x]``, ``[DONATE 1,5]``) does not count; an earlier valid tag then still wins over it.

    Example:
        >>> parse_donation("Maybe [DONATE $1], no wait: [donate $.50]")
        0.5
        >>> parse_donation("I will think about it.") is None
        True
    """
    if not isinstance(text, str):
        return None
    matches = _DONATE.findall(text)
    if not matches:
        return None
    return float(matches[-1].replace(",", ""))


# --- the donor's stated decision, read from free text (for grouping replies by meaning)

_SPOKEN_NUMBER = {"a": 1.0, "an": 1.0, "one": 1.0, "two": 2.0, "both": 2.0, "fifty": 50.0, "ten": 10.0,
                  "twenty": 20.0, "twenty-five": 25.0, "twenty five": 25.0, "seventy-five": 75.0,
                  "seventy five": 75.0, "half a": 0.5, "half an": 0.5, "half of a": 0.5, "a half": 0.5,
                  "a quarter of a": 0.25}  # fmt: skip
_MONEY = re.compile(
    r"\$\s*(\d+(?:\.\d+)?|\.\d+)"
    r"|\b(\d+(?:\.\d+)?|half(?: of)? an?|a half|a quarter of an?|an?|one|two|both|fifty|ten|twenty(?:[- ]five)?"
    r"|seventy[- ]five)\s+(?:(?:single|whole|full|measly|little|extra|of\s+my)\s+)?(dollars?|bucks?|cents?)\b"
)
_ALL_OF_IT = re.compile(
    r"\b(all of it|the whole (?:amount|payment|\$2)|the full (?:amount|payment|\$2)|all (?:two|2) dollars)\b"
)


def spoken_donation(text: str) -> float | None:
    """The last money amount a reply states in words or figures ("$1", "a dollar", "fifty cents",
    "both dollars", "all of it" = $2), in dollars; ``None`` if it states none.

    Example:
        >>> spoken_donation("Okay, count me in for a dollar"), spoken_donation("I could do half a dollar")
        (1.0, 0.5)
    """
    t = text.casefold().replace("’", "'")
    found = None
    for m in _MONEY.finditer(t):
        if m.group(1) is not None:
            found = float(m.group(1))
            continue
        word, unit = m.group(2), m.group(3)
        value = float(word) if word[0].isdigit() else _SPOKEN_NUMBER[word]
        found = value / 100.0 if unit.startswith("cent") else value
    if found is None and _ALL_OF_IT.search(t):
        found = MAX_DONATION
    return found


def _money(x: float) -> str:
    return f"${int(x)}" if float(x).is_integer() else f"${x:.2f}"


_HEDGE = re.compile(
    r"\b(not sure|unsure|maybe|perhaps|might|think about|consider|don'?t know|no idea|let me think|later|depends)\b"
)
_REFUSE = re.compile(
    r"\b(no|nope|nah|never|won'?t|will not|can'?t|cannot|can not|don'?t want|not interested|not going to|"
    r"decline|pass|refuse|rather not|no thanks|not donat\w*|not give|not at this time)\b"
)


def p4g_label(text: str) -> str:
    """Persuasion-for-Good decision label of a donor reply.

    Rules, in order (on the casefolded text):

    1. a ``[DONATE …]`` tag (:func:`parse_donation`, last one wins) → ``"donate:$X"``
       (``$1``, ``$0.50``; ``[DONATE $0]`` is ``"donate:$0"``, kept apart from a verbal refusal);
    2. a hedge (``not sure``, ``maybe``, ``perhaps``, ``might``, ``think about``, ``consider``,
       ``don't know``, ``no idea``, ``let me think``, ``later``, ``depends``) → ``"undecided"``;
    3. a refusal word or phrase (``no``, ``nope``, ``never``, ``won't``, ``can't``, ``cannot``,
       ``don't want``, ``not interested``, ``not going to``, ``decline``, ``pass``, ``refuse``,
       ``rather not``, ``not donate…``, ``not give``, ``not at this time``) → ``"refuse"``;
    4. anything else → ``"undecided"``.

    Only the tag counts as a donation — the benchmark reward reads only the tag — so "I'll give a
    dollar" without one is ``"undecided"``.

    Example:
        >>> p4g_label("OK! [DONATE $1.5]"), p4g_label("No thanks."), p4g_label("Maybe later")
        ('donate:$1.50', 'refuse', 'undecided')
    """
    amount = parse_donation(text)
    if amount is not None:
        return "donate:" + _money(amount)
    t = text.casefold().replace("’", "'")
    if _HEDGE.search(t):
        return "undecided"
    if _REFUSE.search(t):
        return "refuse"
    return "undecided"


Persona = dict[str, JsonValue]
"""A donor persona as its JSONL line gives it: ``persona_id``, the survey scores (``SCORE_FIELDS``,
numbers) and the demographics (``DEMOGRAPHICS``, strings, numbers or null); the official CSVs add
``dialogue_id`` and the persuadee's actual ``donation``."""


@dataclass
class HumanDialogue:
    """One P4G dialogue from the official CSVs."""

    dialogue_id: str
    turns: list[tuple[str, str]]
    """``(speaker, text)`` with speaker ``"policy"`` (persuader) or ``"simulator"`` (persuadee)."""
    persuadee: Persona = field(default_factory=dict)
    """The persuadee's persona (empty when the survey has no row for the dialogue)."""
    donation: float | None = None
    """The persuadee's actual donation, capped at $2 (the task paid $2; larger values are data-entry outliers)."""
    acts: list[list[str]] = field(default_factory=list)
    """Per turn, the annotated dialogue act of each of its sentences (annotated dialogues only, see
    :func:`~collapse_probe.benchmarks.p4g.stance.load_annotated_dialogues`; empty otherwise)."""
