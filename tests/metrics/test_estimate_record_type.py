"""The JSON forms of an interval estimate and of a Verbalized Sampling turn are typed (``EstimateRecord``,
``ChoiceRecord``): the same keys, in the order they were always written."""

from __future__ import annotations

import random

from collapse_probe.metrics.transfer import EstimateRecord, mean_ci
from collapse_probe.simulators.verbalized import ChoiceRecord, choose_verbalized


def test_an_estimate_and_a_vs_turn_are_written_as_their_types_declare():
    d = mean_ci([1.0, 2.0, 3.0]).to_dict()
    assert list(d) == list(EstimateRecord.__annotations__) and d["value"] == 2.0 and d["n"] == 3
    rec = choose_verbalized("1. (p=0.6) Sure.\n2. (p=0.4) No.", 2, random.Random(0)).to_record()
    assert list(rec) == list(ChoiceRecord.__annotations__) and rec["candidates"] == ["Sure.", "No."]


def test_interval_variance_share_and_strategy_entropy_are_written_as_their_types_declare():
    from dataclasses import asdict

    from collapse_probe.core._records import ConversationRecord
    from collapse_probe.metrics._intervals import IntervalFields
    from collapse_probe.metrics.estimators import mean_collapse_error_interval
    from collapse_probe.metrics.strategy import StrategyEntropy, policy_strategy_entropy
    from collapse_probe.metrics.trajectory import VarianceShareFields, simulator_variance_share

    iv = mean_collapse_error_interval([[3, 1], [2, 2]], seed=0)
    assert iv.to_dict() == asdict(iv) and list(iv.to_dict()) == list(IntervalFields.__annotations__)
    vs = simulator_variance_share([[0.0, 1.0], [1.0, 1.0]], n_boot=50)
    d = vs.to_dict()
    assert list(d) == list(VarianceShareFields.__annotations__) and d == {**asdict(vs), "ci": d["ci"]}
    assert d["ci"] is None or isinstance(d["ci"], list)
    recs = [
        ConversationRecord.make(policy="p", simulator="s", task_id=str(i), messages=[{"role": "policy", "content": t}])
        for i, t in enumerate(["a", "a", "b"])
    ]
    e = policy_strategy_entropy(recs, "p")
    assert list(e) == list(StrategyEntropy.__annotations__) and e["n_messages"] == 3 and e["n_classes"] == 2
