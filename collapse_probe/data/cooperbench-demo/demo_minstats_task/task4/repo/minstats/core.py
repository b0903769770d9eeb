"""Descriptive statistics on lists of numbers."""


def mean(xs):
    """Arithmetic mean (``ValueError`` on an empty list)."""
    if not xs:
        raise ValueError("mean of an empty list")
    return sum(xs) / len(xs)


def median(xs):
    """Middle value (mean of the two middle values for an even count)."""
    s = sorted(xs)
    if not s:
        raise ValueError("median of an empty list")
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2
