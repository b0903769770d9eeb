"""Text normalisation shared by the partitions (exact matching, and the distinct replies others class)."""

from __future__ import annotations

import re

_WS = re.compile(r"\s+")
_TRAILING_PUNCT = ".,!?;:…。！？"


def normalize_text(text: str) -> str:
    """Normalise a response for exact matching: casefold, strip, collapse whitespace to one space,
    and strip trailing sentence punctuation (``.,!?;:…``).

    Example:
        >>> normalize_text("  No   thanks!! ")
        'no thanks'
    """
    t = _WS.sub(" ", text.casefold()).strip()
    return t.rstrip(_TRAILING_PUNCT + " ")
