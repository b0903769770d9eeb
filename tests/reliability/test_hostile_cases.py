"""Every hostile input of :mod:`hostile_cases` (readers' limits, plugins, the monitor's API, ``--from``
options, the TRL example) is clean: refused in one line naming what is wrong, or accepted, never a
traceback, the CLI's internal-error backstop, a hang or a silent wrong result."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostile_cases import CASES, REPO, run_case  # noqa: E402

pytestmark = pytest.mark.reliability


@pytest.mark.parametrize("case", CASES, ids=[f"{c.family}: {c.name}" for c in CASES])
def test_hostile_case_is_clean(case):
    outcome, detail = run_case(case, REPO)
    if case.pending and outcome != "clean":
        pytest.xfail(f"{case.pending} ({outcome}: {detail})")
    assert outcome == "clean", f"{outcome}: {detail}"
