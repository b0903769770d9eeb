"""Parse ``key = value`` configuration text."""


def parse(text):
    """Return a dict of the ``key = value`` lines of ``text`` (blank lines skipped)."""
    result = {}
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        key, _, value = line.partition("=")
        result[key.strip()] = value.strip()
    return result
