"""A state's exact distribution over a closed answer set is typed (``ExactDistribution``): the object a
``samples.jsonl`` record keeps as ``exact`` has the declared keys, in the order they were always written."""

from __future__ import annotations

import asyncio
import math

from collapse_probe.models import GenerationRequest
from collapse_probe.pipelines.audit._sampling import OUTSIDE, ExactDistribution, exact_closed_set_distribution


class _Scoring:
    def __init__(self, logps):
        self.logps = logps

    async def score_choices(self, request, choices):
        return self.logps


def _exact(logps):
    request = GenerationRequest(messages=({"role": "user", "content": "Donate?"},))
    return asyncio.run(exact_closed_set_distribution(_Scoring(logps), request, [("[A]", "a"), ("[B]", "b")]))


def test_the_exact_distribution_is_what_its_type_declares():
    out = _exact([math.log(0.5), math.log(0.25)])
    declared = [k for k in ExactDistribution.__annotations__ if k != "note"]
    assert list(out) == declared
    assert out["distribution"] == {"a": 0.5, "b": 0.25, OUTSIDE: 0.25} and out["modal_class"] == "a"
    assert math.isclose(out["collapse_error_conditional"], 1 / 3)
    none = _exact([float("-inf"), float("-inf")])
    assert list(none) == [*declared, "note"] and none["distribution_conditional"] is None
