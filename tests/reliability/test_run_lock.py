"""100 trials of six processes taking one run directory's lock at the same instant, with and without
the stale lock file of a killed process present: never two holders at once."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "rollout"))
from _lock_trials import trial  # noqa: E402

pytestmark = pytest.mark.reliability


@pytest.mark.parametrize("stale", [False, True], ids=["no lock file", "stale lock file"])
def test_six_processes_at_once_never_hold_the_lock_together(tmp_path, stale):
    holders = []
    for _ in range(100):
        n, overlaps = trial(tmp_path, processes=6, stale=stale)
        assert n >= 1 and overlaps == 0, f"{overlaps} overlapping holds among {n} holders"
        holders.append(n)
    print(f"stale={stale}: 100 trials, holders per trial {min(holders)}-{max(holders)}, 0 overlapping holds")
