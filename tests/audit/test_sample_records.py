"""A ``samples.jsonl`` record read back on resume is checked against everything the audit's results
read from it, down to its per-state row's typed model: a field of the wrong type is one line naming the
file, the line and the field (never a crash when the results are written)."""

from __future__ import annotations

import copy

import pytest

from collapse_probe.results._samples import sample_problem

GOOD = {
    "state_id": "t0/opening", "mode": "direct", "source": "opening", "kind": "opening", "turn": 0, "task_id": "t0",
    "status": "ok", "n": 4, "class_counts": [3, 1], "class_names": ["a", "b"], "class_examples": [["a"], ["b"]],
    "responses": ["a", "a", "a", "b"], "labels": [0, 0, 0, 1], "collapse_error": 0.25,
    "collapse_error_ci95": [0.0, 0.7], "collapse_error_corrected": 0.3, "entropy": 0.56, "entropy_ci95": [0.1, 1.0],
    "entropy_note": None, "hill_note": None, "low_confidence": True, "n_empty": 0,
}  # fmt: skip


def test_a_well_formed_record_passes():
    assert sample_problem(copy.deepcopy(GOOD)) is None
    assert sample_problem({**GOOD, "status": "infra_error", "n": 0, "class_counts": [], "error": "timeout"}) is None


@pytest.mark.parametrize(
    ("field", "value"),
    [("task_id", []), ("task_id", 1.5), ("entropy_note", {}), ("hill_note", 3), ("low_confidence", "x"),
     ("low_confidence", [])],
)  # fmt: skip
def test_a_field_only_the_results_read_is_checked_too(field, value):
    problem = sample_problem({**copy.deepcopy(GOOD), field: value})
    assert problem is not None and field in problem and "\n" not in problem


def test_an_infrastructure_failure_record_is_checked_too():
    problem = sample_problem({**GOOD, "status": "infra_error", "task_id": [], "n": 0, "class_counts": []})
    assert problem is not None and "task_id" in problem
