"""The audit's typed blocks (``pipelines/audit/_types.py``) keep the bytes of ``results.json``: the fields an
interval contributes, in its order, and the records' exact distributions read only where they were scored."""

from __future__ import annotations

import json

import pytest

from collapse_probe.metrics.estimators import mean_collapse_error_interval, mean_entropy_interval
from collapse_probe.pipelines.audit import AuditConfig
from collapse_probe.pipelines.audit._summary import (
    exact_scored,
    mean_collapse_error,
    mean_entropy,
    paired_difference,
    summarize_states,
)
from collapse_probe.pipelines.audit._views import exact_summary

COUNTS = [[5, 3, 2], [9, 1], [4, 4, 1, 1]]


@pytest.mark.parametrize(
    ("typed", "interval"), [(mean_collapse_error, mean_collapse_error_interval), (mean_entropy, mean_entropy_interval)]
)
def test_a_mean_interval_has_the_estimates_fields_in_their_order(typed, interval):
    got = typed(COUNTS, seed=3)
    want = interval(COUNTS, seed=3).to_dict()
    assert json.dumps(got) == json.dumps(want)  # same keys, same order, same values
    assert got["ci95"] is not want["ci95"]  # a copy, as to_dict makes: editing one block cannot edit another


def _record(state_id, counts, exact=None, **extra):
    rec = {"state_id": state_id, "status": "ok", "source": "opening", "kind": "opening", "n": sum(counts),
           "class_counts": counts, "collapse_error": 1 - counts[0] / sum(counts), "collapse_error_corrected": 0.1,
           "entropy": 0.5, **extra}  # fmt: skip
    if exact is not None:
        rec["exact"] = exact
    return rec


SCORED = {"distribution": {"a": 0.5, "outside the set": 0.5}, "collapse_error": 0.25, "closed_set_mass": 0.5,
          "outside_mass": 0.5, "modal_class": "a", "distribution_conditional": {"a": 1.0},
          "collapse_error_conditional": 0.0}  # fmt: skip
FAILED = {"distribution": None, "collapse_error": None, "error": "RuntimeError: no logprobs"}


def test_only_a_scored_exact_distribution_is_read():
    assert exact_scored(SCORED)
    assert not exact_scored(FAILED) and not exact_scored(None) and not exact_scored({})
    records = [_record("s1", [3, 1], SCORED), _record("s2", [2, 2], FAILED), _record("s3", [4])]
    summary = summarize_states(records, AuditConfig(samples=4))
    assert summary["n_exact_states"] == 1 and summary["exact_collapse_error"] == 0.25
    ex = exact_summary(records)
    assert ex is not None and ex["n_states"] == 1 and ex["collapse_error_in_set"] == 0.0


def test_paired_difference_reads_the_reward_views_counts_and_refuses_another_view():
    rv = {"class_names": ["x", "y"], "class_counts": [3, 1], "collapse_error": 0.25, "collapse_error_estimate": 0.25,
          "collapse_error_ci95": [0.0, 0.6]}  # fmt: skip
    a = [_record("s1", [2, 2], reward_view=rv), _record("s2", [3, 1])]
    b = [_record("s1", [4], reward_view={**rv, "class_counts": [4]}), _record("s2", [4], reward_view=rv)]
    headline = paired_difference(a, b, seed=0)
    reward = paired_difference(a, b, seed=0, view="reward_view")
    assert headline["n_states"] == 2 and headline["all_states"]
    assert reward["n_states"] == 1 and not reward["all_states"]  # a's s2 is not read by the reward
    assert list(reward)[-3:] == ["a_estimate", "b_estimate", "all_states"]
    with pytest.raises(ValueError, match="view: expected 'reward_view' or None, got 'decision'"):
        paired_difference(a, b, seed=0, view="decision")


def _keys(typed):
    return set(typed.__required_keys__ | typed.__optional_keys__)


def _fields(model):
    return {f.alias or name for name, f in model.model_fields.items()}


@pytest.mark.parametrize(
    ("typed_name", "model_name", "extra"),
    [
        ("AuditSummary", "AuditSummary", {"meaning_checks"}),  # read by the verdict, kept as an extra field
        ("ViewVerdict", "VerdictView", {"partition_label", "validated_on"}),
        ("VerdictParts", "VerdictText", set()),
        ("MeanDifference", "Difference", {"a", "b"}),  # collapse_error_difference's sides, renamed when paired
        ("SequentialSummary", "SequentialAudit", set()),
        ("SequentialViewRecord", "SequentialView", set()),
        ("SequentialLook", "SequentialLook", set()),
        ("CompareVSBlock", "CompareVS", set()),
        ("RewardViewSummary", "RewardView", set()),
        ("ExactSummary", "ExactSummary", set()),
        ("DecisionSummary", "DecisionCollapseError", set()),
        ("ParseFailures", "ParseFailures", set()),
        ("CollapseErrorBlock", "CollapseErrorEstimate", set()),
        ("EntropyBlock", "EntropyEstimate", {"lower_bound_only"}),
        ("SourceMean", "StatesSummary", set()),
        ("StateRowDict", "StateRow", {"entropy_lower_bound_only"}),
        ("AuditResultsDict", "AuditResults", set()),
    ],
)
def test_each_typed_block_has_the_keys_of_its_results_model(typed_name, model_name, extra):
    """The pipeline's TypedDicts and the results models that check the finished results.json name the same
    keys (beside the extras the models keep as they are): a key added to one and not the other fails here."""
    from collapse_probe.pipelines.audit import _types
    from collapse_probe.results import _audit

    assert _keys(getattr(_types, typed_name)) - extra == _fields(getattr(_audit, model_name))
