"""Patch hygiene as the reference evaluator does it before merging.

Each agent patch is sanitised (``'\\''`` -> ``'``, a trailing newline) and every file section whose
``diff --git`` line names a test file is dropped, so an agent cannot earn credit by editing tests.
The markers are the reference's, case-sensitive: ``/test_``, ``/tests/``, ``_test.py``, ``/test/``,
``tests.py`` (Go ``_test.go`` and TypeScript ``__tests__/`` are kept, as there).
"""

from __future__ import annotations

import re

TEST_MARKERS = ("/test_", "/tests/", "_test.py", "/test/", "tests.py")

_INDEX = re.compile(r"^index ([0-9a-f]{7,64})\.\.([0-9a-f]{7,64})(?: \d+)?$")
_DIFF_GIT = re.compile(r"^diff --git a/(.+?) b/(.+)$")


def sanitize(patch: str) -> str:
    """Undo shell quoting residue (``'\\''`` -> ``'``) and end the patch with a newline ('' stays '')."""
    text = (patch or "").replace("'\\''", "'")
    if text.strip() == "":
        return ""
    return text if text.endswith("\n") else text + "\n"


def split_sections(patch: str) -> list[str]:
    """The patch cut at every ``diff --git`` line (text before the first one is its own section)."""
    sections: list[str] = []
    current: list[str] = []
    for line in patch.splitlines(keepends=True):
        if line.startswith("diff --git ") and current:
            sections.append("".join(current))
            current = []
        current.append(line)
    if current:
        sections.append("".join(current))
    return sections


def is_test_section(section: str) -> bool:
    first = section.split("\n", 1)[0]
    return first.startswith("diff --git ") and any(m in first for m in TEST_MARKERS)


def drop_test_sections(patch: str) -> str:
    """``patch`` without the file sections that touch test files."""
    return "".join(s for s in split_sections(patch) if not is_test_section(s))


def clean_patch(patch: str) -> str:
    """:func:`sanitize` then :func:`drop_test_sections` (what the evaluator merges)."""
    return sanitize(drop_test_sections(sanitize(patch)))


def touched_files(patch: str) -> list[str]:
    """Paths (``b/`` side) named by the ``diff --git`` lines of ``patch``, in order."""
    out = []
    for line in patch.splitlines():
        m = _DIFF_GIT.match(line)
        if m:
            out.append(m.group(2))
    return out


def preimage_blobs(patch: str) -> dict[str, str]:
    """Path -> abbreviated blob id of the file before the patch (from ``index a..b`` lines).

    New files (all-zero ids) are left out. Used to check that a BASE tree is the one a patch was made on.
    """
    out: dict[str, str] = {}
    path: str | None = None
    for line in patch.splitlines():
        m = _DIFF_GIT.match(line)
        if m:
            path = m.group(1)
            continue
        m = _INDEX.match(line)
        if m and path is not None:
            if set(m.group(1)) != {"0"}:
                out.setdefault(path, m.group(1))
            path = None
    return out
