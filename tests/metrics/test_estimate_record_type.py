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
