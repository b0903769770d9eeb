"""Shipped documentation holds no unfilled placeholder: a line that is one ALL_CAPS_TOKEN (what a
table generator or a draft leaves where its numbers belong)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_no_placeholder_lines_in_docs_or_readme():
    found = []
    for path in [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.fullmatch(r"\s*[A-Z][A-Z0-9]*_[A-Z0-9_]+\s*", line):
                found.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not found, found
