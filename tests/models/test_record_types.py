"""Sampling parameters and completions are written as typed records (``SamplingRecord``,
``CompletionRecord``) holding exactly what the dataclasses hold: the answer cache's keys and entries are
unchanged."""

from __future__ import annotations

from dataclasses import asdict

from collapse_probe.models import Completion, SamplingParams
from collapse_probe.models._types import CompletionRecord, SamplingRecord


def test_the_records_are_the_dataclasses_fields_in_order():
    p = SamplingParams(temperature=0.7, top_p=0.9, max_tokens=12, stop=("\n", "User:"), seed=3, logprobs=True)
    assert p.to_dict() == {**asdict(p), "stop": ["\n", "User:"]}
    assert list(p.to_dict()) == list(SamplingRecord.__annotations__)
    full = Completion("hi", [-0.1], "stop", [{"id": "c", "name": "f", "arguments": {"x": [1]}}], 1, [7])
    d = full.to_dict()
    assert d == asdict(full) and list(d) == list(CompletionRecord.__annotations__)
    d["tool_calls"][0]["arguments"]["x"].append(2)
    assert full.tool_calls == [{"id": "c", "name": "f", "arguments": {"x": [1]}}]  # a copy, as asdict made
    assert Completion("only text").to_dict() == {"text": "only text"}
    assert Completion.from_dict(d).text == "hi"
