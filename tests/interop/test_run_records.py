"""The narrowing helpers the exporters read a run's checked records through."""

from __future__ import annotations

import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.integrations.interop._rundata import checked_number, json_list, json_objects


def test_json_list_and_objects_read_only_arrays_and_their_objects():
    assert json_list([1, "a", None]) == [1, "a", None]
    assert json_list(None) == [] and json_list({"a": 1}) == [] and json_list("abc") == []
    assert json_objects([{"role": "policy"}, "text", 3, {"role": "simulator"}]) == [
        {"role": "policy"},
        {"role": "simulator"},
    ]
    assert json_objects({"role": "policy"}) == []


def test_checked_number_gives_a_float_and_names_a_field_that_holds_none():
    assert checked_number({"reward": 1}, "reward") == 1.0 and isinstance(checked_number({"reward": 1}, "reward"), float)
    assert checked_number({"entropy": 0.25}, "entropy") == 0.25
    for bad in ({"reward": True}, {"reward": "0.5"}, {"reward": None}, {}):
        with pytest.raises(ConfigError, match=r"^a record's reward: expected a number, got "):
            checked_number(bad, "reward")
