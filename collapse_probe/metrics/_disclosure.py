"""What a conversational reply *states* and *asks for*, read without a model and without a domain's
vocabulary: the facts and acts that decide the other party's next action.

The meaning of a user-simulator reply in a service conversation (τ2-bench, τ-bench, any help desk) is
what the agent must act on (``RUBRIC`` below): the request or decision the reply makes and the facts it
states. Sentence encoders read such replies as near duplicates — replies to one prompt sit at a median
cosine distance of about 0.1, "return the t-shirt" and "return the sunglasses" closer than two wordings
of one request — so a distance threshold alone cannot see which facts differ.

:func:`disclosures` reads a reply into items ``family:value``, with no list of a domain's words:

- **facts by shape**: ``id:`` (a token of letters and digits, with underscores, ``#`` codes, upper-case
  codes), ``email:``, ``phone:``, ``money:``, ``date:`` (``May 21st``, ``21 May``, ISO, ``5/21``, week
  days), ``time:``, ``num:`` (numbers and number words, so "two bags" = "2 bags"), ``name:`` (a
  capitalised word inside a sentence) and ``quote:`` (a quoted string);
- **content words** ``w:<lemma>``: every noun, adjective or unknown word (items, option values, colours,
  sizes, settings, conditions), lemmatised by ``lemminflect``'s dictionary ("sunglasses" = "sunglass"),
  less function words and the vocabulary of politeness and of asking for help, which every reply shares;
- **polarity**: ``neg:<lemma>`` for a content word under a negation ("no allergies", "not working",
  "without the case") and ``pol:on`` / ``pol:off`` (turn on / off, enable / disable);
- **acts** ``act:<name>``: domain-free request and decision verbs with their synonyms mapped to one name
  (return = send back, exchange = swap = replace, change = modify = reschedule, cancel, refund, add,
  remove, order = buy = book, pay, check, transfer to a person), the speech acts yes / no / "I don't
  know", a question asked (not a request such as "can you help me?"), and ending the conversation.

What the conversation already said is subtracted by the caller: restating it discloses nothing new.
:func:`pair_features` turns two replies' items and their embedding distance into the features of the
pairwise equivalence model (:mod:`collapse_probe.metrics._service`): which fact families differ, how
many content words one reply has in place of another's (a substitution: "black" for "white") and how
many only one of them adds, with the rare ones (Zipf frequency below :data:`RARE_ZIPF`, ``wordfreq``)
counted apart, whether an act, a polarity or a question differs, and the distance.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from collapse_probe.core._state import on_reset, process_cache

__all__ = [
    "ACTS",
    "FAMILIES",
    "RARE_ZIPF",
    "RUBRIC",
    "SYNONYM_SIMILARITY",
    "VALUES",
    "disclosures",
    "feature_names",
    "new_disclosures",
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

RARE_ZIPF = 4.5
"""A content word whose Zipf frequency (``wordfreq``, English) is below this is *rare*: items, brands,
conditions and settings mostly are; the words of any conversation ("time", "order") mostly are not."""

_MONTH = (
    r"(january|february|march|april|may|june|july|august|september|october|november|december|"
    r"jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DATE = re.compile(
    r"\b" + _MONTH + r"\s+(?:the\s+(?=\d{1,2}(?:st|nd|rd|th)\b))?(\d{1,2})(?:st|nd|rd|th)?\b", re.I
)  # "May the 2nd"
_DATE_RANGE = re.compile(
    r"\b" + _MONTH + r"\s+\d{1,2}(?:st|nd|rd|th)?\s*(?:to|through|thru|until|till|-|\u2013|and)\s*(?:the\s+)?"
    r"(\d{1,2})(?:st|nd|rd|th)?\b(?!\s*(?::|am\b|pm\b|of\b|" + _MONTH + r"))", re.I)  # fmt: skip
_DATE_DAY_FIRST = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r"(?!\w)", re.I)
_ISO_DATE = re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")
_SLASH_DATE = re.compile(r"\b(\d{1,2})/(\d{1,2})(?:/(\d{4}|\d{2}))?\b")
_WEEKDAY = re.compile(r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b", re.I)
_TIME = re.compile(r"\b(\d{1,2})(?::(\d\d))?\s*(am|pm|a\.m\.|p\.m\.)", re.I)
_TIME_24 = re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)\b")
_HOURS = "one two three four five six seven eight nine ten eleven twelve".split()
_HOUR = r"(\d{1,2}|" + "|".join(_HOURS) + r")(?::([0-5]\d))?"
_DAYPART = r"(?:\s+(?:in the\s+)?(morning|afternoon|evening|tonight|at night))?"
_CLOCK_AT = re.compile(r"\b(?:at|after|before|by|around|until|till|from|about)\s+" + _HOUR + r"(\s*o'?clock)?"
                       + _DAYPART + r"(?![\w:])", re.I)  # fmt: skip
_CLOCK_OCLOCK = re.compile(r"\b" + _HOUR + r"\s*o'?clock" + _DAYPART + r"(?![\w:])", re.I)
_CLOCK_DAYPART = re.compile(r"\b" + _HOUR + r"\s+in the\s+(morning|afternoon|evening)\b", re.I)
_CLOCK_NEXT = re.compile(r"\s*([a-z][a-z']*)?", re.I)
_AFTER_CLOCK = frozenset("works work is would will should could suits suit and or then please sharp on if for that to "
                         "tomorrow today tonight this next but so with instead i we as fine good ok okay at".split())  # fmt: skip
"""Words that may follow a bare hour ("at 10 works", "after 2 on Friday"): any other word makes the number
a count ("after 5 days", "at 2 locations"); an hour in words ("after one") must end its clause."""
_ORDINAL = re.compile(r"\b(\d{1,3})(?:st|nd|rd|th)\b", re.I)
_DAY_ORDINAL_NEXT = re.compile(r"\s*(?:$|[^\w\s]|(?:of|to|through|thru|until|till|and|or|instead|then|at|if|but|"
                               r"please|would|works|is|as|since|for|because|so|though|too|when|before|after|by|"
                               r"from|on|onwards)\b)", re.I)  # fmt: skip
_FREQUENCY = re.compile(
    r"\b(?:(?:every|each|per)|(?<=\bonce )a|(?<=\btwice )a|(?<=\btimes )a|(?<=\d )a|(?<=dollars )a|(?<=euros )a|"
    r"(?<=pounds )a)\s+(day|week|month|year)\b|\b(annual)(?:ly)?\b", re.I)  # fmt: skip
_FREQUENCIES = {"day": "daily", "week": "weekly", "month": "monthly", "year": "yearly", "annual": "yearly"}
"""A frequency is one option value however it is worded: "$200 a month" = "$200 monthly", "once a day"
= "daily", "per year" = "annual" = "yearly"."""
_STREETS = {"st": "Street", "ave": "Avenue", "av": "Avenue", "rd": "Road", "blvd": "Boulevard", "ln": "Lane",
            "ct": "Court", "hwy": "Highway", "apt": "Apartment", "ste": "Suite"}  # fmt: skip
_STREET = re.compile(r"\b([A-Z][a-z]+\s+|\d\w*\s+)?(St|Ave|Av|Rd|Blvd|Ln|Ct|Hwy|Apt|Ste)\b(\.(?=\s+[A-Z]|\s*$))?\.?"
                     r"(?(1)|(?=\s*#?\d))")  # fmt: skip
"""Address abbreviations: "Main St." is "Main Street", "Apt 3B" is "Apartment 3B" (after a name or a number,
or before a number)."""
_LAST_DIGITS = re.compile(r"\blast\s+(?:two|three|four|five|six|[2-6])(?:\s+(?:digits|numbers))?\b", re.I)
_MONEY = re.compile(
    r"[$€£]\s?(\d[\d,]*(?:\.\d+)?)|\b(\d[\d,]*(?:\.\d+)?)\s*(?:dollars|usd|bucks|euros?|pounds)\b", re.I
)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_PHONE = re.compile(r"(?<![\w.])\+?\(?\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}\b|(?<![\w.,$€£#-])\d{10}(?![\w.,-]\d)\b")
_ID = re.compile(
    r"#\s?[\w-]*\d[\w-]*"  # order #W123, # 4411
    r"|\b(?=[\w-]*\d)(?=[\w-]*[a-z])[a-z][\w-]{2,}\b"  # letters and digits: a1b2c3, sku-123, user_9
    r"|\b[a-z]+(?:_[a-z0-9]+)+\b"  # snake_case ids without a digit
    r"|\b\d[\w-]*[a-z][\w-]*\b",  # 12ab, 4k (a number with its unit glued on is read here too)
    re.I,
)
_CODE = re.compile(r"\b[A-Z][A-Z0-9]{2,11}\b")
_NUMBER = re.compile(r"(?<![\w$€£#.:/])(\d+(?:[.,]\d+)?)(?![\w:/])")
_QUOTE = re.compile(r"[\"“]([^\"”]{2,80})[\"”]")
_CAPITALISED = re.compile(r"(?<![\w'])([A-Z][a-z]+(?:'[A-Z]?[a-z]+)?)")
_WORD = re.compile(r"[a-z][a-z'-]*[a-z]|[a-z]")
_SENTENCE_END = '.!?:;\n"(-\u2013\u2014'
_NUMBER_WORDS = {
    "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9",
    "ten": "10", "eleven": "11", "twelve": "12", "thirteen": "13", "fourteen": "14", "fifteen": "15",
    "sixteen": "16", "seventeen": "17", "eighteen": "18", "nineteen": "19", "twenty": "20", "thirty": "30",
    "forty": "40", "fifty": "50", "sixty": "60", "hundred": "100", "single": "1", "double": "2", "twice": "2",
    "half": "0.5",
}  # fmt: skip
_ORDINAL_WORDS = {w: n for n, w in enumerate(
    "_ first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth "
    "fifteenth sixteenth seventeenth eighteenth nineteenth twentieth".split()) if n}  # fmt: skip
_ORDINAL_WORDS |= {"thirtieth": 30} | {f"{t}-{w}": v + n for t, v in (("twenty", 20), ("thirty", 30))
                                      for w, n in _ORDINAL_WORDS.items() if n < 10 and v + n <= 31}  # fmt: skip
_ORDINAL_WORD = re.compile(
    r"\b(the|my|your|our|his|her|their|this|that|its)(\s+)(" + "|".join(sorted(_ORDINAL_WORDS, key=len, reverse=True))
    + r")\b", re.I)  # fmt: skip
"""An ordinal word after a determiner ("the fourth floor", "the first of next month") is a number; alone
it is an adverb or a unit ("first, ...", "on second thought", "wait a second")."""
_NOT_CODES = frozenset(
    "PLEASE THANKS CANCEL REFUND ASAP STOP TRANSFER HELLO YES NO OK OKAY THE AND URGENT HELP ASAP FYI".split()
)

# Function words, the vocabulary of politeness and of asking for help, and words every service reply
# shares: none of them tells the agent what to act on, and paraphrases differ in them.
_STOP = frozenset(
    """a an the this that these those it its it's i i'm i'd i'll i've me my mine myself we we're our us you
    you're your yours he she him her his they them their there here what which who whom whose when where why
    how whether if then than so and or but nor as at by for from in into of off on onto out over to up upon
    with within without about above across after against along among around before behind below beneath
    beside between beyond down during except inside near outside past since through throughout till toward
    towards under underneath until via be am is are was were been being do does did done doing have has had
    having can could may might must shall should will would ought not no nor never none n't don't doesn't
    didn't isn't aren't wasn't weren't won't wouldn't can't cannot couldn't shouldn't haven't hasn't hadn't
    just also too very really quite rather pretty so such much many more most some any all both each every
    either neither other another else own same only even still yet already again ever once now then today
    tonight soon later currently actually basically probably maybe perhaps definitely certainly sure surely
    hi hello hey dear greetings good morning afternoon evening day night bye goodbye thanks thank thankyou
    please kindly sorry apologies appreciate appreciated great perfect awesome wonderful fantastic excellent
    fine okay ok alright right well yes yeah yep nope oh ah um uh hmm wow glad happy pleasure welcome nice
    lovely sounds sound like love hope proceed ahead continue hoping wish wishing wonder wondering want wanting wanted need needing
    needed help helping helped assistance assist assisting assisted support question questions query
    inquiry enquiry issue issues matter matters thing things something anything everything nothing stuff way
    ways bit lot lots kind sort type regard regards regarding concerning reference respect time times moment
    moments minute second while point place case situation information info detail details process step
    steps option options back possible possibility able chance sure certain get got getting go going goes went
    gone make making made take taking took taken give giving gave given let lets let's see seeing saw seen
    look looking looked know knowing knew known think thinking thought feel feeling felt tell telling told say
    saying said ask asking asked try trying tried call calling called reach reaching contact contacting
    talk talking speak speaking spoke run running use using used come coming came put
    keep keeping hear heard mean meant guess figure sort sorted handle handling handled deal dealing care
    taken recently currently earlier later previously just yet anyway anyhow though although however
    because since while whereas therefore otherwise instead meanwhile first firstly also additionally
    further furthermore besides plus next last following following one ones someone somebody anyone
    anybody everyone everybody person people customer agent representative rep service team account name
    mister mr mrs ms miss sir madam dr ma'am folks guys""".split()
)

_CLAUSE_START = r"(?:^|[.!?;,:\u2014\u2013]|\s-)[^\w'.!?;,:\u2014\u2013-]*"
"""Where an answer word starts a clause: "Yes, ...", "..., yes.", "Not yet, no."."""

# Request and decision verbs (and the nouns of the same act), one name per act: paraphrases map to one.
ACTS: tuple[tuple[str, str], ...] = (
    ("cancel", r"\b(cancel\w*|call(ing)? off|terminat\w*|close (my|the|this) \w+)\b"),
    ("return", r"\b(return(s|ed|ing)?(?=\s+(the|my|it|them|this|that|these|those|a|an|some|both|one|all|his|her|our|their|everything|\w+ (and|or|from|for|to|because|since)\b)|\s*[.,!?;]|\s*$)|send(ing)? (\w+ ){0,3}back|sent (\w+ ){0,3}back|ship(ping)? (\w+ ){0,3}back|bring (\w+ ){0,3}back)\b"),
    ("exchange", r"\b(exchang\w*|swap\w*|replac\w*|trade (\w+ ){0,2}(for|in))\b"),
    ("refund", r"\b(refund\w*|reimburs\w*|money back|chargeback)\b"),
    ("change", r"\b(chang\w*|modif\w*|adjust\w*|reschedul\w*|updat\w*|edit\w*|alter\w*|amend\w*|rebook\w*|mov(e|ing) (it|my|the)|(be|been|being|get|got) moved)\b"),
    ("add", r"\b(add|adding|added|include)\b"),
    ("remove", r"\b(remov\w*|delet\w*|take (\w+ )?off|drop (\w+ )?from)\b"),
    ("order", r"\b(book(ing)? (a|an|another|the|new|same)|to book|order (a|an|another|some|the|new)|purchas\w*|buy\w*|reserv(e|ing) (a|an|the|one|it)|schedul(e|ing) (a|an|another|new)|set(ting)? up (a|an|another|new))\b"),
    ("pay", r"\b(pay|paying|paid|payment|charge[ds]?|bill(ed|ing)?)\b"),
    ("check", r"\b(check(ing)? (on|the|my|if|whether|status)|status|track\w*|look (it |them |\w+ )?up|where is|find out|figure out|search\w*)\b"),
    ("compensation", r"\b(compensat\w*|vouchers?|discount\w*)\b"),
    ("upgrade", r"\bupgrad\w*"),
    ("downgrade", r"\bdowngrad\w*"),
    ("human", r"\b(human|real person|live (agent|person)|(?<!my )(?<!our )(?<!his )(?<!her )(supervisor|manager))\b"),
    ("stop", r"###(STOP|TRANSFER|OUT-OF-SCOPE)###|\b(that'?s all(?! (correct|right|good|fine|true|accurate))|that is all|nothing else|that'?s everything|that covers (it|everything)|that'?s it for (today|now)|(i'?m|we'?re) all set|that('?ll| will) be all|good ?bye|bye)\b"),
    ("yes", _CLAUSE_START + r"(yes|yeah|yep|yup|sure|certainly|correct|exactly|absolutely|definitely|of course|indeed|right|that'?s (right|correct|it|fine|good|perfect|great)|(that|this|it) (works|sounds (good|great|fine|right|perfect))|sounds (good|great|fine|right|perfect)|go (ahead|for it)|please (do|proceed|continue)|(let'?s|you (can|may)|i'?d like to|i want to|please) (proceed|continue|go ahead|do it|do that)|proceed|do it|confirm(s|ed|ing)?|agreed|i agree|works for me|fine by me)\b(?!\s*\?)(?!\s+not\b)(?<!\bright(?= now))"),
    ("no", r"^\W*(no(?! (one|problem|worries|rush)\b)|nope|nah|not really|actually,? no|none|not (yet|now|right now|at the moment|today))\b|\b(absolutely|definitely|certainly|of course|surely) not\b|" + _CLAUSE_START + r"(no|nope|nah)(?=\s*[.!;,\u2014\u2013]|\s*$)|\b(never ?mind|don'?t want|do not want|decline|rather not|not yet|hold off|i'?ll pass|let'?s not|please don'?t)\b|\b(not|\w+n't)\b[^.!?;,]{0,30}\byet\b"),
    ("dont_know", r"\b((don'?t|do not) (know|remember|recall)|(don'?t|do not) have (it|them|that|this|those|my|the|his|her|their|our)\b(?![^.!?;]*\byet\b)|not sure|unsure|can'?t (find|remember|recall|locate)|forgot|no idea)\b"),
)  # fmt: skip
"""Domain-free request, decision and speech acts: ``(name, regular expression)``; a reply that
matches states ``act:<name>``."""

_ACT_RX = tuple((name, re.compile(rx, re.I | re.M)) for name, rx in ACTS)
_ACT_WORDS = frozenset(
    """cancel cancellation return exchange swap replace replacement refund reimbursement change modify
    modification adjust adjustment reschedule update edit alter amend add remove removal delete order
    purchase buy book booking reserve pay payment charge check status track compensation voucher
    discount upgrade downgrade human supervisor manager confirm confirmation decline send ship bring
    trade""".split()
)
"""Words the acts stand for: not content words too (the act reads them, with their synonyms)."""

_NEGATORS = frozenset("no not n't never without none nothing nobody noone nowhere neither nor don't doesn't didn't "
                      "isn't aren't wasn't weren't won't can't cannot haven't hasn't hadn't".split())  # fmt: skip
_POLITE_NO = frozenset("problem problems worries worry rush else".split())
"""What "no" politely dismisses ("no problem", "no rush", "nothing else"): no negation of anything the agent
acts on."""
_NOT_KNOWING = frozenset("know remember recall find locate sure".split())
_ANSWER_WORDS = frozenset("no not nope nah yet now really thanks thank you sorry please at all right i".split())
"""A clause of these words only ("No,", "Not yet.", "Not right now, thanks") answers; it negates nothing."""
NEGATED = "neg:*"
"""The item of a reply that negates something (a negator other than a bare "No," answering, which is
``act:no``): two replies of which one negates and the other does not differ in polarity."""
_REQUEST_QUESTION = re.compile(
    r"^\W*(?:(?:hi|hello|hey|ok|okay|thanks|great)(?: there)?\W+)?(?:and |so |also |but )?"
    r"(?:(can|could|would|will|may)\s+(you|i|we)\b|please|i'?d|i would|i want|i need)", re.I
)  # fmt: skip
_STATE = r"(turn|switch|shut|power|flip|toggl|leave|left|keep|kept|stay)\w* (\w+ ){0,3}%s\b|\b(is|are|was|were|be|been|it's|still|all|now|stays?) %s(?=\s*(?:[.,!?;]|$|(?:and|but|too|now|again|already|as well|though|so|or)\b))|\b%s(?=\s*[.,!?;]|$)"
_POL_ON = re.compile(r"\b(" + _STATE % ("on", "on", "on") + r"|enabl\w*|activat\w*)", re.I)
_POL_OFF = re.compile(r"\b(" + _STATE % ("off", "off", "off") + r"|disabl\w*|deactivat\w*)", re.I)
_NOT_A_STATE = frozenset("hold held holding go going come coming carry later so sign signed signing take took taken taking "
                         "day days drop dropped pay paid kick kicked back show showed log logged put based depend "
                         "depends rely focus move moving drove drive driving ran run walked went rode flew".split())  # fmt: skip
"""Phrasal verbs whose "on" / "off" is no setting: "hold off", "sign off on", "hold on", "later on"."""

VALUES = frozenset(
    """black white red blue green yellow orange purple pink brown grey gray silver gold beige navy tan
    maroon teal cream ivory small medium large extra-large xl xxl xs petite tall short wide narrow
    left right front top bottom upper lower new used refurbished single double twin queen king
    daily weekly monthly yearly annual quarterly morning afternoon evening weekday weekend early late
    cheap cheapest expensive basic standard premium deluxe regular express overnight""".split()
)
"""Option values every catalogue and form uses (colours, sizes, sides, conditions, frequencies, tiers):
two such values are two different choices, though a sentence encoder reads "black" and "white" as
near synonyms (cosine 0.76). A content word in this list also states ``val:<word>``."""

FAMILIES = ("id", "email", "phone", "money", "date", "time", "num", "name", "quote", "val")
"""The fact families :func:`disclosures` reads by shape (besides ``w:``, ``neg:``, ``pol:`` and ``act:``)."""


@lru_cache(maxsize=1)
def _lexicon() -> Any:  # the lemminflect module
    from collapse_probe.errors import require

    lemminflect = require("lemminflect", "embed", "the disclosure meaning partition (content words)")
    return lemminflect


_NOUNS: set[str] = process_cache("metrics.disclosure_nouns", set())
"""Content words read as nouns (or unknown to the dictionary: brands, items, codes), by their surface
(filled by :func:`_lemma`; a reset empties both, so the set is refilled as words are read again)."""


@lru_cache(maxsize=20000)
def _lemma(word: str) -> str | None:
    """A content word's lemma (noun first, then adjective, then verb), ``None`` for an adverb or a
    function word; a word the dictionary does not know (a brand, a code, a rare item) is a
    content word as it stands, its plural read as a noun's."""
    lex = _lexicon()
    parts = [w for w in word.split("'", 1)[0].split("-") if w]  # "mom's" is "mom"
    if not parts:
        return None
    head = parts[-1]  # compound words keep their modifiers: "t-shirt", "one-way"
    known = lex.getAllLemmas(head)
    if not known or "NOUN" in known or "PROPN" in known:
        _NOUNS.add("-".join(parts))
    if not known:
        guess = lex.getAllLemmasOOV(head, upos="NOUN").get("NOUN", (head,))[0] if head.endswith("s") else head
        base = guess
    elif "NOUN" in known or "PROPN" in known:
        base = (known.get("NOUN") or known["PROPN"])[0]
    elif "ADJ" in known:
        base = known["ADJ"][0]
    elif "VERB" in known:
        base = known["VERB"][0]  # "freeze" / "cancel", "stolen" / "lost": verbs carry the request too
    elif len(parts) > 1:
        base = head
    else:
        return None
    return "-".join([*parts[:-1], base]) if len(parts) > 1 else base


on_reset("metrics.disclosure_lemmas", _lemma.cache_clear)


@lru_cache(maxsize=20000)
def rarity(lemma: str) -> float:
    """Zipf frequency of a content word (its first part for a compound); 0 for a word wordfreq lacks."""
    from collapse_probe.errors import require

    wordfreq = require("wordfreq", "embed", "the disclosure meaning partition (rare words)")
    return float(wordfreq.zipf_frequency(lemma.split("-")[-1], "en"))


def _month(word: str) -> str:
    return word[:3].lower()


class _Found:
    """Facts found so far and the spans they cover (in the order found: later patterns skip taken spans)."""

    def __init__(self) -> None:
        self.out: set[str] = set()
        self.taken: list[tuple[int, int]] = []

    def add(self, item: str, m: re.Match[str]) -> None:
        self.out.add(item)
        self.taken.append(m.span())

    def free(self, m: re.Match[str]) -> bool:
        return not any(a < m.end() and m.start() < b for a, b in self.taken)


def _contact_and_time_facts(t: str, found: _Found) -> None:
    """E-mails, phones, dates, weekdays, times and amounts."""
    add = found.add
    for m in _EMAIL.finditer(t):
        add("email:" + m.group(0).lower(), m)
    for m in _PHONE.finditer(t):
        add("phone:" + re.sub(r"\D", "", m.group(0))[-10:], m)
    for m in _DATE.finditer(t):
        add(f"date:{_month(m.group(1))}-{int(m.group(2))}", m)
    for m in _DATE_DAY_FIRST.finditer(t):
        add(f"date:{_month(m.group(2))}-{int(m.group(1))}", m)
    for m in _DATE_RANGE.finditer(t):  # "June 12 to 15": the 15th is of June too
        if int(m.group(2)) <= 31:
            add(f"date:{_month(m.group(1))}-{int(m.group(2))}", m)
    for m in _ISO_DATE.finditer(t):
        if 1 <= int(m.group(2)) <= 12:
            add(f"date:{_MONTHS[int(m.group(2)) - 1]}-{int(m.group(3))}", m)
            found.out.add("num:" + m.group(1))  # the year, as "March 4, 1985" states it
    for m in _SLASH_DATE.finditer(t):
        if 1 <= int(m.group(1)) <= 12 and 1 <= int(m.group(2)) <= 31:
            add(f"date:{_MONTHS[int(m.group(1)) - 1]}-{int(m.group(2))}", m)
            if m.group(3) and len(m.group(3)) == 4:
                found.out.add("num:" + m.group(3))
    for m in _WEEKDAY.finditer(t):
        add("date:" + m.group(1).lower(), m)
    for m in _TIME.finditer(t):
        hour = int(m.group(1)) % 12 + (12 if m.group(3).lower().startswith("p") else 0)
        add(f"time:{hour}:{m.group(2) or '00'}", m)
    for m in _TIME_24.finditer(t):
        if found.free(m):
            add(f"time:{int(m.group(1))}:{m.group(2)}", m)
    for m in _MONEY.finditer(t):
        amount = (m.group(1) or m.group(2)).replace(",", "")
        add("money:" + (amount.rstrip("0").rstrip(".") if "." in amount else amount), m)
    _clock_times(t, found)
    _ordinals(t, found)
    for m in _LAST_DIGITS.finditer(t):  # "last four 3092": the count of digits is wording, not a number stated
        found.taken.append(m.span())


def _hour(word: str) -> int:
    return int(word) if word.isdigit() else _HOURS.index(word.lower()) + 1


def _clock_times(t: str, found: _Found) -> None:
    """Times without am / pm: "10 o'clock", "3 in the afternoon", "at 10", "after one" (an hour after a
    preposition, when no unit follows: not "after 5 days"). Without a part of the day, an hour from 1 to 7
    is read as afternoon (the convention of office hours: "Thursday at 2" is 2 PM), 8 to 11 as morning and 12 as
    noon ("at 12 tonight": midnight). A word hour after "by" or "about" needs "o'clock" or a part of the day."""
    matches = [*_CLOCK_OCLOCK.finditer(t), *_CLOCK_DAYPART.finditer(t), *_CLOCK_AT.finditer(t)]
    for m in matches:
        hour_word, minutes = m.group(1), m.group(2)
        daypart = (m.group(m.re.groups) or "").lower()
        if not found.free(m) or _hour(hour_word) > 23:
            continue
        if m.re is _CLOCK_AT and not (m.group(3) or daypart):
            following = _CLOCK_NEXT.match(t, m.end())
            word = (following.group(1) or "").lower() if following else ""
            if word and (word not in _AFTER_CLOCK or not hour_word.isdigit()):
                continue  # "after 5 days", "at 2 locations", "from one account"
            if not hour_word.isdigit() and m.group(0).split(maxsplit=1)[0].lower() in ("by", "about"):
                continue  # "one by one", "a question about one"
        hour = _hour(hour_word)
        if hour == 12:  # noon, unless the reply says night
            hour = 0 if daypart in ("tonight", "at night") else 12
        elif hour < 12:
            afternoon = daypart in ("afternoon", "evening", "tonight", "at night") or (not daypart and 1 <= hour <= 7)
            hour = hour + (12 if afternoon else 0)
        found.add(f"time:{hour}:{minutes or '00'}", m)


def _ordinals(t: str, found: _Found) -> None:
    """Ordinals outside a date: a day of the month when nothing but a connective follows ("the 15th",
    "the 1st of next month": of the one month the reply names, if it names one), else a number ("the 4th
    floor" is floor 4)."""
    months = {x.split(":", 1)[1].split("-", 1)[0] for x in found.out if x.startswith("date:") and "-" in x}
    for m in _ORDINAL.finditer(t):
        if not found.free(m):
            continue
        n = int(m.group(1))
        if n <= 31 and _DAY_ORDINAL_NEXT.match(t, m.end()):
            found.add(f"date:{next(iter(months))}-{n}" if len(months) == 1 else f"date:day-{n}", m)
        else:
            found.add(f"num:{n}", m)


def _identifier_and_name_facts(t: str, found: _Found) -> None:
    """Identifiers, codes, numbers and quotes outside the spans already taken, and names inside a sentence."""
    add, free = found.add, found.free
    for m in _ID.finditer(t):
        if free(m):
            add("id:" + re.sub(r"[#\s]", "", m.group(0)).lower(), m)
    for m in _CODE.finditer(t):
        if free(m) and m.group(0) not in _NOT_CODES and not (len(m.group(0)) <= 3 and m.group(0) == "I"):
            add("id:" + m.group(0).lower(), m)
    for m in _NUMBER.finditer(t):
        if free(m):
            add("num:" + m.group(1).replace(",", ""), m)
    for m in _QUOTE.finditer(t):  # its words are read too: "set to internet" states what '"internet"' does
        found.out.add("quote:" + " ".join(m.group(1).lower().split()))
    for m in _CAPITALISED.finditer(t):
        before = t[: m.start()].rstrip()
        if not before or before[-1] in _SENTENCE_END:
            continue  # a sentence's first word is capitalised whatever it is
        word = m.group(1).lower()
        if word in _STOP or word in _NUMBER_WORDS or _WEEKDAY.fullmatch(word) or re.fullmatch(_MONTH, word):
            continue
        add("name:" + word, m)


def _facts(t: str) -> tuple[set[str], list[tuple[int, int]]]:
    """Facts read by shape, and the spans they cover (no content word is read inside them)."""
    found = _Found()
    _contact_and_time_facts(t, found)
    _identifier_and_name_facts(t, found)
    return found.out, found.taken


def _words(t: str) -> set[str]:
    """Content words (``w:``), negated content words (``neg:``) and number words (``num:``)."""
    out: set[str] = set()
    low = t.lower()
    for clause in re.split(r"[.!?;,:\n()]+|\b(?:but|and|or|so|because)\b", low):
        tokens = _WORD.findall(clause)
        negated_from = None
        for k, tok in enumerate(tokens):
            if tok in _NEGATORS or tok.endswith("n't"):
                negated_from = k
                nxt = tokens[k + 1] if k + 1 < len(tokens) else ""
                if nxt in _NOT_KNOWING:  # "can't find", "not sure": the act dont_know, not a fact negated
                    negated_from = None
                    continue
                if not (nxt in _POLITE_NO or set(tokens) <= _ANSWER_WORDS or "yet" in tokens):
                    out.add(NEGATED)  # not "No, ...", "not yet", "I haven't yet" (answers), "nothing else"
                continue
            if tok in _NUMBER_WORDS:
                out.add("num:" + _NUMBER_WORDS[tok])
                continue
            if tok in _STOP or tok in _ACT_WORDS or len(tok) < 2:
                continue
            lemma = _lemma(tok)
            if lemma is None or lemma in _STOP or (lemma in _ACT_WORDS and not tok.endswith(("ing", "ings"))):
                continue  # "checking" (an account) is not the act of checking
            out.add("w:" + lemma)
            if tok in _NOUNS or "-".join(w for w in tok.split("'", 1)[0].split("-") if w) in _NOUNS:
                out.add("n:" + lemma)
            if lemma in VALUES:
                out.add("val:" + lemma)
            if negated_from is not None:  # to the end of the clause: "haven't been able to use mobile data"
                out.add("neg:" + lemma)
    return out


_UNITS = {w: n for n, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())}  # fmt: skip
_TENS = {w: 10 * n for n, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if n > 1}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_NUMBER_RUN = re.compile(
    r"\b(?:(?:a|one|" + "|".join([*_UNITS, *_TENS]) + r")[\s-]+)?(?:(?:" + "|".join([*_UNITS, *_TENS, *_SCALES])
    + r")(?:[\s-]+(?:and[\s-]+)?|\b)){1,6}", re.I)  # fmt: skip


def _number_value(words: list[str]) -> int | None:
    total = current = 0
    seen = False
    for w in words:
        if w in ("a", "and"):
            current = current or (1 if w == "a" else current)
            continue
        if w in _UNITS:
            current += _UNITS[w]
        elif w in _TENS:
            current += _TENS[w]
        elif w in _SCALES:
            current = max(current, 1) * _SCALES[w]
            if _SCALES[w] >= 1000:
                total, current = total + current, 0
        else:
            return None
        seen = True
    return total + current if seen else None


def _digits(text: str) -> str:
    """Spelled-out numbers of two or more words, or with a scale, as digits ("five hundred dollars" is
    "500 dollars", "eighteen hundred" is "1800"): so they compare equal to the same number in digits."""

    def sub(m: re.Match[str]) -> str:
        words = [w.lower() for w in re.split(r"[\s-]+", m.group(0).strip()) if w]
        if len(words) < 2 and not (words and words[0] in _SCALES):
            return m.group(0)
        value = _number_value(words)
        return m.group(0) if value is None else f"{value} "

    return _NUMBER_RUN.sub(sub, text)


def _word_before(t: str, at: int) -> str:
    words = _WORD.findall(t[max(0, at - 30) : at].lower())
    return words[-1] if words else ""


_ANSWERS = frozenset({"yes", "no", "dont_know", "stop", "human"})


def _acts(t: str) -> set[str]:
    """The acts a reply makes. A request verb under a negation in its clause ("I don't want to change
    anything", "if the price doesn't change") is no request; ending the conversation ("No, that's all")
    is not also a yes or a no."""
    out = set()
    for name, rx in _ACT_RX:
        for m in rx.finditer(t):
            clause = re.split(r"[.!?;,:\n]", t[max(0, m.start() - 40) : m.start()])[-1].lower()
            if name in _ANSWERS or not any(w in _NEGATORS or w.endswith("n't") for w in _WORD.findall(clause)[-3:]):
                out.add("act:" + name)
                break
    if "act:stop" in out:
        out -= {"act:yes", "act:no"}
    return out


def disclosures(text: str) -> frozenset[str]:
    """The facts, content words, polarities and acts a reply states, as ``family:value`` strings.

    Example:
        >>> sorted(disclosures("Hi, I'm Raj Sanchez. Please return the black t-shirt from order #W2378156."))
        ['act:return', 'id:w2378156', 'name:raj', 'name:sanchez', 'w:black', 'w:t-shirt']
    """
    t = text.replace("\u2019", "'").replace("\u2018", "'")
    t = _digits(_ORDINAL_WORD.sub(lambda m: f"{m.group(1)}{m.group(2)}{_ORDINAL_WORDS[m.group(3).lower()]}th", t))
    t = _FREQUENCY.sub(lambda m: _FREQUENCIES[(m.group(1) or m.group(2)).lower()], t)
    t = _STREET.sub(lambda m: (m.group(1) or "") + _STREETS[m.group(2).lower()] + (m.group(3) or ""), t)
    out, spans = _facts(t)
    masked = list(t)
    for a, b in spans:
        masked[a:b] = " " * (b - a)
    out.update(_words("".join(masked)))
    out.update(_acts(t))
    for name, rx in (("pol:on", _POL_ON), ("pol:off", _POL_OFF)):
        if any(_word_before(t, m.start()) not in _NOT_A_STATE for m in rx.finditer(t)):
            out.add(name)
    for sentence in re.findall(r"[^.!?\n]*\?", t):
        if not _REQUEST_QUESTION.search(sentence.strip()):
            out.add("act:question")
            break
    return frozenset(out)


def new_disclosures(text: str, known: Iterable[str] = ()) -> frozenset[str]:
    """:func:`disclosures` of ``text`` less what the conversation already said (``known``)."""
    return disclosures(text) - frozenset(known)


SYNONYM_SIMILARITY = 0.5
"""Two content words whose encoder embeddings have cosine at least this are read as one wording of a
thing ("flight" / "trip" 0.60, "mom" / "mother" 0.90, "sick" / "ill" 0.56), below it as two things
("t-shirt" / "sunglasses" 0.33, "savings" / "checking" 0.27). Co-hyponyms the encoder puts close
("black" / "white" 0.76) are option :data:`VALUES`, compared by their ``val:`` items instead."""


def feature_names() -> list[str]:
    """Names of :func:`pair_features`' columns, in order."""
    return [
        "distance",
        "distance_sq",
        *(f"differs:{f}" for f in FAMILIES),
        "n_fact_differences",
        "words_substituted",
        "words_added",
        "distinct_words_substituted",
        "distinct_words_added",
        "rare_distinct_words",
        "distinct_nouns_substituted",
        "most_distinct_word",
        "differs:neg",
        "differs:pol",
        "n_act_differences",
        "differs:act:question",
        "differs:act:yes_no",
        "differs:act:stop",
        "differs:act:dont_know",
        "differs:choice",
        "same_items",
    ]


def _unmatched(mine: set[str], theirs: set[str], similarity: Callable[[str, str], float] | None) -> set[str]:
    """Words of ``mine`` with no word of ``theirs`` at :data:`SYNONYM_SIMILARITY` or more."""
    if similarity is None:
        return set(mine)
    return {w for w in mine if not any(similarity(w, v) >= SYNONYM_SIMILARITY for v in theirs)}


def pair_features(
    a: frozenset[str],
    b: frozenset[str],
    distance: float,
    similarity: Callable[[str, str], float] | None = None,
    known: frozenset[str] = frozenset(),
) -> list[float]:
    """The pairwise model's features of two replies (their new :func:`disclosures` and embedding distance).

    A content word one reply has where the other has another one is a *substitution* ("black" for
    "white", "t-shirt" for "sunglasses"): the smaller of the two sides' unmatched counts. The rest are
    *additions* (one reply says more). They are counted twice: as they stand, and *distinct* — less the
    words that have a synonym on the other side under ``similarity`` (a function of two lemmas, the
    cosine of their encoder embeddings; ``None`` treats every word as distinct). Counts are capped at 3.

    ``known`` is what the conversation already said. An item of it that one reply restates and the other
    does not is no difference (restating); two replies that each pick a *different* item of one family
    from it ("the first one, #W912" / "the second one, #W551" after the agent listed both; "credit card"
    / "gift card" after it offered both) make a different choice: ``differs:choice``.
    """
    a, b = _aligned(a, b | known), _aligned(b, a | known)
    ca, cb = (a & known) - b, (b & known) - a
    choice = bool({x.split(":", 1)[0] for x in ca} & {x.split(":", 1)[0] for x in cb})
    negation = _negation_differs(a, b)
    a, b = a - known, b - known
    diff = {x for x in a ^ b if not x.startswith(("n:", "neg:"))}
    facts = [x for x in diff if x.split(":", 1)[0] in FAMILIES]
    families = {x.split(":", 1)[0] for x in facts}
    return [
        float(distance),
        float(distance) ** 2,
        *(1.0 if f in families else 0.0 for f in FAMILIES),
        float(min(len(facts), 3)),
        *_word_features(a, b, similarity),
        *_act_features(diff, choice, negation),
    ]


def _aligned(mine: frozenset[str], theirs: frozenset[str]) -> frozenset[str]:
    """``mine`` read as ``theirs`` reads the same words: a capitalised word that starts a sentence here
    ("Outlook keeps crashing") is the name the other reply or the conversation states inside one ("every
    time I launch Outlook"); a quoted value ('It says "internet"') is stated by a reply that has its
    words unquoted ("set to internet") and quotes nothing."""
    names = {x[5:] for x in theirs if x.startswith("name:")}
    lemmas = {_lemma(n) or n: n for n in names}
    out = set(mine)
    for x in mine:
        if x.startswith("w:") and x[2:] in lemmas and "name:" + lemmas[x[2:]] not in mine:
            out -= {x, "n:" + x[2:]}
            out.add("name:" + lemmas[x[2:]])
    if not any(x.startswith("quote:") for x in theirs):
        stated = {x.split(":", 1)[1] for x in theirs}
        for x in mine:
            if x.startswith("quote:"):
                words = [w for w in _WORD.findall(x[6:]) if w not in _STOP]
                if words and all(w in stated or _lemma(w) in stated for w in words):
                    out.discard(x)
    return frozenset(out)


def _negation_differs(a: frozenset[str], b: frozenset[str]) -> bool:
    """One reply negates and the other does not ("nobody was hurt" / "my passenger hurt her arm"), or one
    negates a word the other states plainly ("no fever" / "a fever"); two replies that negate in other
    words ("nobody was hurt" / "no one was injured") do not differ."""
    if (NEGATED in a) != (NEGATED in b):
        return True

    def swapped(mine: frozenset[str], theirs: frozenset[str]) -> bool:  # mine negates what theirs states plainly
        return any(x.startswith("neg:") and x != NEGATED and "w:" + x[4:] in theirs and x not in theirs for x in mine)

    return swapped(a, b) and swapped(b, a)  # "on the laptop, not the desktop" / "on the desktop, not the laptop"


def _word_features(a: frozenset[str], b: frozenset[str], similarity: Callable[[str, str], float] | None) -> list[float]:
    """Substituted, added, distinct, rare and noun content words, and the farthest word from the other side."""
    wa = {x[2:] for x in a - b if x.startswith("w:")}
    wb = {x[2:] for x in b - a if x.startswith("w:")}
    all_a = {x[2:] for x in a if x.startswith("w:")}
    all_b = {x[2:] for x in b if x.startswith("w:")}
    da = _unmatched(wa, all_b, similarity)
    db = _unmatched(wb, all_a, similarity)
    rare = sum(1 for w in da | db if rarity(w) < RARE_ZIPF)
    nouns_a = {w for w in da if "n:" + w in a}
    nouns_b = {w for w in db if "n:" + w in b}
    most = 0.0
    for mine, theirs in ((wa, all_b), (wb, all_a)):
        for w in mine:
            best = max((similarity(w, v) for v in theirs), default=0.0) if similarity is not None else 0.0
            most = max(most, 1.0 - best)
    return [
        float(min(len(wa), len(wb), 3)),
        float(min(abs(len(wa) - len(wb)), 3)),
        float(min(len(da), len(db), 3)),
        float(min(abs(len(da) - len(db)), 3)),
        float(min(rare, 3)),
        float(min(len(nouns_a), len(nouns_b), 3)),
        most,
    ]


def _act_features(diff: set[str], choice: bool, negation: bool) -> list[float]:
    """Negation, polarity and act differences, a different choice among offered items, and no difference."""
    acts = {x for x in diff if x.startswith("act:")}
    return [
        1.0 if negation else 0.0,
        1.0 if any(x.startswith("pol:") for x in diff) else 0.0,
        float(min(len(acts), 3)),
        1.0 if "act:question" in acts else 0.0,
        1.0 if acts & {"act:yes", "act:no"} else 0.0,
        1.0 if "act:stop" in acts else 0.0,
        1.0 if "act:dont_know" in acts else 0.0,
        1.0 if choice else 0.0,
        1.0 if not diff and not choice and not negation else 0.0,
    ]
