"""URL slugs."""

import re


def slugify(text):
    """Lower-case ``text`` and join its alphanumeric words with ``-``."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return "-".join(words)
