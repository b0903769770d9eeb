"""What a customer-service reply *discloses* and *asks for*: the facts and requests that decide the
agent's next action, read offline without a model.

The meaning of a user-simulator reply in a customer-service conversation (τ2-bench, τ-bench) is
what the agent must act on (``RUBRIC`` below): the request or decision the reply makes and the
task-relevant facts it discloses (user id, names, reservation or order numbers, dates, times,
amounts, places, items, reasons, preferences). Sentence encoders read these replies as near
duplicates — customer-service replies to one prompt sit at a median cosine distance of about 0.1, and
"I don't remember my user ID" / "My user ID is sophia_taylor_9065" are 0.24 apart — so a distance
threshold alone cannot see that one reply gives the agent an id and the other does not.

:func:`disclosures` extracts a reply's items as strings of a *family* and a value: ``id:…``,
``email:…``, ``code:…`` (reservation / order numbers), ``date:may-21``, ``time:15:00``,
``money:120``, ``place:EWR`` (airport codes, and city names mapped to them), ``name:…`` (proper
nouns inside a sentence), ``num:…`` and ``c:…`` (a request, decision or preference concept:
``c:cancel``, ``c:refund``, ``c:nonstop``, ``c:reason_health``, ``c:stop`` …). What the conversation
already said (the prefix) is subtracted by the caller: restating it discloses nothing new.

:func:`pair_features` turns two replies' items and their embedding distance into the features of
the pairwise equivalence model (:mod:`collapse_probe.metrics._service_model`): which families differ,
which concepts differ, and the distance.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "CONCEPTS",
    "FAMILIES",
    "RUBRIC",
    "disclosures",
    "feature_names",
    "pair_features",
]

RUBRIC = (
    "Two replies are in the SAME class when they mean the same thing to the agent, so that the agent's "
    "correct next action would be identical: they make the same request or decision (cancel, change, ask for "
    "a refund or compensation, confirm, decline, answer a question, ask a question, end the conversation) and "
    "they disclose the same task-relevant facts (user id, name, reservation or order number, dates, amounts, "
    "items, reasons, conditions, preferences the agent must act on). Wording, politeness, greetings, order "
    "of facts, small talk, length and restating what the agent already said do not matter; a fact disclosed "
    "by one and not the other (or a different value), a different request or decision, a question instead of "
    "an answer, or ending the call instead of going on do."
)
"""The meaning-class definition of a customer-service reply (what the judge partition is asked, and
what the labelled states behind the shipped model were labelled against)."""

_MONTH = (
    r"(january|february|march|april|may|june|july|august|september|october|november|december|"
    r"jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DATE = re.compile(r"\b" + _MONTH + r"\s+(\d{1,2})(?:st|nd|rd|th)?\b", re.I)
_DATE_DAY_FIRST = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r"(?!\w)", re.I)
_ISO_DATE = re.compile(r"\b(?:19|20)\d\d-(\d\d)-(\d\d)\b")
_TIME = re.compile(r"\b(\d{1,2})(?::(\d\d))?\s*(am|pm|a\.m\.|p\.m\.)", re.I)
_TIME_24 = re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)\b")
_MONEY = re.compile(r"\$\s?(\d[\d,]*(?:\.\d+)?)|\b(\d[\d,]*(?:\.\d+)?)\s*(?:dollars|usd|bucks)\b", re.I)
_USER_ID = re.compile(r"\b[a-z]+(?:_[a-z]+)+_\d+\b", re.I)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_CODE = re.compile(r"#?\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{5,12}\b|#[A-Z]?\d{4,}\b|\b[A-Z]{6}\b")
_NUMBER = re.compile(r"(?<![\w$#.:])(\d+(?:\.\d+)?)(?![\w:])")
_CAPITALISED = re.compile(r"(?<![\w'])([A-Z][a-z]+(?:'[A-Z]?[a-z]+)?)")
_AIRPORT = re.compile(r"\b[A-Z]{3}\b")
_SENTENCE_END = '.!?:;\n"(-\u2013\u2014'

PLACES = {
    "atlanta": "ATL", "austin": "AUS", "boston": "BOS", "charlotte": "CLT", "chicago": "ORD", "o'hare": "ORD",
    "dallas": "DFW", "denver": "DEN", "detroit": "DTW", "houston": "IAH", "las vegas": "LAS", "vegas": "LAS",
    "los angeles": "LAX", "laguardia": "LGA", "la guardia": "LGA", "miami": "MIA", "minneapolis": "MSP",
    "newark": "EWR", "new york": "NYC", "kennedy": "JFK", "orlando": "MCO", "philadelphia": "PHL",
    "phoenix": "PHX", "portland": "PDX", "salt lake city": "SLC", "san diego": "SAN", "san francisco": "SFO",
    "seattle": "SEA", "washington": "DCA", "texas": "TX", "california": "CA", "florida": "FL",
}  # fmt: skip
"""Place names as the airport code (or region) customer-service replies also use for them, so
"from Newark" and "from EWR" disclose the same place."""

_PLACE_WORDS = {w for name in PLACES for w in name.split()}
_NOT_NAMES = frozenset(
    """i i'm i'd i'll i've hi hello hey thanks thank yes no okay ok sure please could can would will my the a an
    and but so if that this it is are was be do does did have has had what when where which who why how great
    perfect alright also actually well oh just let sorry dear sir madam mr mrs ms miss dr monday tuesday
    wednesday thursday friday saturday sunday today tomorrow january february march april may june july august
    september october november december user id ids reservation economy business basic first class""".split()
)
_NOT_CODES = frozenset({"PLEASE", "THANKS", "CANCEL", "REFUND", "ASAP", "STOP", "TRANSFER", "HELLO"})

CONCEPTS: tuple[tuple[str, str], ...] = (
    ("cancel", r"\bcancel\w*"),
    ("change", r"\b(chang\w*|modif\w*|adjust\w*|reschedul\w*|switch\w*|rebook\w*|mov(e|ing) (it|my|the))\b"),
    ("book", r"\b(book (a|an|another|the|new|same|my)|to book|booking (a|an|another|new))\b"),
    ("refund", r"\brefund\w*"),
    ("compensation", r"\b(compensat\w*|vouchers?|certificates?)\b"),
    ("upgrade", r"\bupgrad\w*"),
    ("downgrade", r"\bdowngrad\w*"),
    ("remove", r"\b(remov\w*|take \w+ off|drop \w+ from)\b"),
    ("add", r"\b(add|adding)\b"),
    ("exchange", r"\b(exchang\w*|replace\w*|swap\w*)\b"),
    ("return_item", r"\breturn(ing)? (the|an|my|this|these|those|it|them|\w+ (item|order)s?)\b|\bsend(ing)? (\w+ ){0,3}back\b"),
    ("baggage", r"\b(bag|bags|baggage|luggage|suitcases?)\b"),
    ("insurance", r"\binsur\w*"),
    ("nonstop", r"\b(non-?stop|direct flights?)\b"),
    ("business", r"\bbusiness class\b|\bbusiness\b(?! trip)"),
    ("basic_economy", r"\bbasic economy\b"),
    ("economy", r"(?<!basic )\beconomy\b"),
    ("first_class", r"\bfirst class\b"),
    ("cheapest", r"\b(cheap\w*|lowest (price|fare|cost)|least expensive)\b"),
    ("fastest", r"\b(fastest|quickest|shortest)\b"),
    ("earliest", r"\b(earliest|earlier|sooner|as soon as)\b"),
    ("later", r"\b(later|latest)\b"),
    ("same_day", r"\bsame day\b"),
    ("next_day", r"\b(next day|day later|following day|tomorrow)\b"),
    ("round_trip", r"\bround[- ]trip\b"),
    ("one_way", r"\bone[- ]way\b"),
    ("return_flight", r"\breturn (flight|trip|leg)s?\b|\bflight back\b"),
    ("passenger", r"\bpassengers?\b"),
    ("card", r"\b(credit|debit) cards?\b|\bcard ending\b"),
    ("gift_card", r"\bgift ?cards?\b"),
    ("paypal", r"\bpaypal\b"),
    ("original_payment", r"\boriginal (payment|form|method)\b"),
    ("balance", r"\bbalances?\b"),
    ("address", r"\baddress\w*"),
    ("reason_health", r"\b(sick|ill|illness|health|medical|hospital\w*|surgery|doctor)\b"),
    ("reason_family", r"\b(mother|mom|father|dad|family|wife|husband|son|daughter|kids?|children)\b"),
    ("reason_weather", r"\bweather\b"),
    ("reason_work", r"\b(work|meeting|business trip|conference)\b"),
    ("delay", r"\bdelay\w*"),
    ("complaint", r"\b(frustrat\w*|unacceptable|upset|angry|disappoint\w*|ridiculous)\b"),
    ("transfer_human", r"\b(human|real person|supervisor|manager)\b"),
    ("stop", r"###(STOP|TRANSFER|OUT-OF-SCOPE)###"),
    ("yes", r"^\W*(yes|yeah|yep|sure|correct|that's (right|correct)|please (proceed|go ahead)|go ahead|confirm\w*)\b"),
    ("no", r"^\W*(no|nope|not really|actually,? no)\b"),
    ("dont_know", r"\b(don'?t (have|know|remember|recall)|do not (have|know|remember)|not sure|can'?t (find|remember|recall))\b"),
    ("list", r"\b(list|show me|look (it |them )?up|find (it|them|my))\b"),
    ("all", r"\b(all|both|every|each)\b"),
    ("membership", r"\b(gold|silver|regular) (member|status)\w*\b"),
)  # fmt: skip
"""Request, decision and preference concepts: ``(name, regular expression)``; a reply that matches
discloses ``c:<name>``. Paraphrases map to one concept (change / modify / adjust / reschedule)."""

_CONCEPT_RX = tuple((name, re.compile(rx, re.I | (re.M if name in ("yes", "no") else 0))) for name, rx in CONCEPTS)

FAMILIES = ("id", "email", "code", "date", "time", "money", "place", "name", "num")
"""The fact families :func:`disclosures` extracts besides the ``c:`` concepts."""


def _month(word: str) -> str:
    return word[:3].lower()


def disclosures(text: str) -> frozenset[str]:
    """The facts and concepts a reply discloses, as ``family:value`` strings.

    Example:
        >>> sorted(disclosures("Hi, I'm Raj Sanchez. Please cancel reservation H9ZU1C from EWR on May 21st."))
        ['c:cancel', 'code:H9ZU1C', 'date:may-21', 'name:raj', 'name:sanchez', 'place:EWR']
    """
    t = text.replace("\u2019", "'").replace("\u2018", "'")
    low = t.lower()
    out: set[str] = set()
    out.update("id:" + m.group(0).lower() for m in _USER_ID.finditer(t))
    out.update("email:" + m.group(0).lower() for m in _EMAIL.finditer(t))
    for m in _DATE.finditer(t):
        out.add(f"date:{_month(m.group(1))}-{int(m.group(2))}")
    for m in _DATE_DAY_FIRST.finditer(t):
        out.add(f"date:{_month(m.group(2))}-{int(m.group(1))}")
    for m in _ISO_DATE.finditer(t):
        month = int(m.group(1))
        if 1 <= month <= 12:
            out.add(f"date:{_MONTHS[month - 1]}-{int(m.group(2))}")
    for m in _TIME.finditer(t):
        hour = int(m.group(1)) % 12 + (12 if m.group(3).lower().startswith("p") else 0)
        out.add(f"time:{hour}:{m.group(2) or '00'}")
    for m in _TIME_24.finditer(t):
        out.add(f"time:{int(m.group(1))}:{m.group(2)}")
    for m in _MONEY.finditer(t):
        amount = (m.group(1) or m.group(2)).replace(",", "")
        out.add("money:" + (amount.rstrip("0").rstrip(".") if "." in amount else amount))
    for m in _CODE.finditer(t):
        word = m.group(0).lstrip("#")
        if word not in _NOT_CODES:
            out.add("code:" + word)
    for m in _AIRPORT.finditer(t):
        if m.group(0) not in _NOT_CODES:
            out.add("place:" + m.group(0))
    for name, code in PLACES.items():
        if re.search(r"\b" + re.escape(name) + r"\b", low):
            out.add("place:" + code)
    for m in _CAPITALISED.finditer(t):
        word = m.group(1).lower()
        if word in _NOT_NAMES or word in _PLACE_WORDS:
            continue
        before = t[: m.start()].rstrip()
        if not before or before[-1] in _SENTENCE_END:
            continue  # a sentence's first word is capitalised whatever it is
        out.add("name:" + word)
    values = {item.split(":", 1)[1] for item in out}
    for m in _NUMBER.finditer(t):
        if not any(m.group(1) in v for v in values):
            out.add("num:" + m.group(1))
    out.update("c:" + name for name, rx in _CONCEPT_RX if rx.search(t))
    return frozenset(out)


def new_disclosures(text: str, known: Iterable[str] = ()) -> frozenset[str]:
    """:func:`disclosures` of ``text`` less what the conversation already said (``known``)."""
    return disclosures(text) - frozenset(known)


def feature_names() -> list[str]:
    """Names of :func:`pair_features`' columns, in order."""
    return [
        "distance",
        "distance_sq",
        *(f"differs:{f}" for f in FAMILIES),
        *(f"differs:c:{name}" for name, _ in CONCEPTS),
        "n_fact_differences",
        "n_concept_differences",
    ]


def pair_features(a: frozenset[str], b: frozenset[str], distance: float) -> list[float]:
    """The pairwise model's features of two replies: their embedding distance, whether each fact
    family and each concept differs between their disclosures, and how many items differ."""
    diff = a ^ b
    families = {item.split(":", 1)[0] for item in diff if not item.startswith("c:")}
    concepts = {item for item in diff if item.startswith("c:")}
    n_facts = sum(1 for item in diff if not item.startswith("c:"))
    return [
        float(distance),
        float(distance) ** 2,
        *(1.0 if f in families else 0.0 for f in FAMILIES),
        *(1.0 if f"c:{name}" in concepts else 0.0 for name, _ in CONCEPTS),
        float(min(n_facts, 5)),
        float(min(len(concepts), 5)),
    ]
