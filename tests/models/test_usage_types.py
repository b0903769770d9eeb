"""A model's spend is typed (``UsageRecord``): what ``usage.json`` and ``results.json`` hold per spec has
exactly its four fields, in the order they were always written."""

from __future__ import annotations

from collapse_probe.models._usage import Usage, UsageRecord


def test_a_usage_record_holds_its_declared_fields_in_order():
    d = Usage(requests=3, input_tokens=10, output_tokens=4, cost_usd=0.1 + 0.2).to_dict()
    assert list(d) == list(UsageRecord.__annotations__) == ["requests", "input_tokens", "output_tokens", "cost_usd"]
    assert d["cost_usd"] == 0.3  # rounded to nano-dollars: no float noise
    assert Usage(cost_usd=None).to_dict()["cost_usd"] is None
    assert Usage.from_dict(d) == Usage(3, 10, 4, 0.3)
