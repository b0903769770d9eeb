"""Scripted model (known distribution), registry and the sample-indexed response cache."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.models import (
    CachedModel,
    GenerationRequest,
    ResponseCache,
    SamplingParams,
    get_model,
    resolve_spec,
)


def _req(n=1, seed=1, first=0, msgs=None):
    return GenerationRequest(
        messages=tuple(msgs or [{"role": "user", "content": "hi"}]),
        n=n,
        params=SamplingParams(seed=seed),
        first_sample=first,
    )


def test_scripted_samples_follow_the_known_distribution(write_scripted):
    spec = write_scripted([("a", 0.5), ("b", 0.3), ("c", 0.2)])
    model = get_model(spec)
    [res] = asyncio.run(model.generate([_req(n=4000, seed=7)]))
    counts = Counter(c.text for c in res.completions)
    # 4000 draws: each frequency within 4 binomial standard deviations of the truth
    for text, p in (("a", 0.5), ("b", 0.3), ("c", 0.2)):
        sd = (p * (1 - p) / 4000) ** 0.5
        assert abs(counts[text] / 4000 - p) < 4 * sd


def test_scripted_sample_index_addressing_is_consistent(write_scripted):
    model = get_model(write_scripted([("a", 0.5), ("b", 0.5)]))
    [whole] = asyncio.run(model.generate([_req(n=20, seed=3)]))
    [tail] = asyncio.run(model.generate([_req(n=10, seed=3, first=10)]))
    assert [c.text for c in whole.completions[10:]] == [c.text for c in tail.completions]


def test_scripted_turns_select_list_by_own_turn_count(write_scripted):
    spec = write_scripted([("x", 1.0)], turns=[[("first", 1.0)], [("later", 1.0)]])
    model = get_model(spec)
    msgs0 = [{"role": "user", "content": "q"}]
    msgs2 = msgs0 + [
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "q"},
    ]
    r0, r2 = asyncio.run(model.generate([_req(msgs=msgs0), _req(msgs=msgs2)]))
    assert r0.completions[0].text == "first" and r2.completions[0].text == "later"  # last list repeats


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ({"responses": [{"text": "a", "p": 0.5}, {"text": "b", "p": 0.4}]}, "sum to 0.9"),
        ({"responses": [{"text": "a"}]}, "'responses'[0]"),
        ({"responses": [{"text": 3, "p": 1.0}]}, ".text"),
        ({"responses": [{"text": "a", "p": -1}, {"text": "b", "p": 2}]}, ".p"),
        ({"answers": []}, "'responses' list"),
        ({"responses": [{"text": "a", "p": 1}], "turns": [[{"text": "a", "p": 0.2}]]}, "turns[0]"),
    ],
)
def test_malformed_scripted_files_name_file_and_field(tmp_path, payload, fragment):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(payload))
    with pytest.raises(ConfigError) as exc:
        get_model(f"scripted:{path}")
    assert str(path) in str(exc.value) and fragment in str(exc.value)


def test_scripted_file_missing_or_not_json(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        get_model(f"scripted:{tmp_path / 'nope.json'}")
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        get_model(f"scripted:{bad}")


def test_unknown_spec_suggests_close_matches():
    with pytest.raises(ConfigError, match="Did you mean 'smollm2'"):
        resolve_spec("smollm")
    with pytest.raises(ConfigError, match="Known:"):
        resolve_spec("zzz-model")
    assert resolve_spec("gpt-5-mini") == "openai/gpt-5-mini"


def test_cache_serves_independent_draws_per_sample_index(tmp_path, write_scripted):
    spec = write_scripted([(f"r{i}", 0.1) for i in range(10)])
    inner = get_model(spec)
    cache = ResponseCache(tmp_path / "c.sqlite")
    model = CachedModel(inner, cache)
    [first] = asyncio.run(model.generate([_req(n=50, seed=11)]))
    assert model.misses == 50 and len(cache) == 50
    [again] = asyncio.run(model.generate([_req(n=50, seed=11)]))
    assert model.hits == 50
    texts = [c.text for c in again.completions]
    assert texts == [c.text for c in first.completions]
    assert len(set(texts)) > 5  # 50 draws over 10 equiprobable texts: never one copy repeated


def test_cache_fetches_only_missing_samples(tmp_path, write_scripted):
    inner = get_model(write_scripted([("a", 0.5), ("b", 0.5)]))
    model = CachedModel(inner, ResponseCache(tmp_path / "c.sqlite"))
    asyncio.run(model.generate([_req(n=10, seed=5)]))
    [res] = asyncio.run(model.generate([_req(n=25, seed=5)]))
    assert model.hits == 10 and model.misses == 10 + 15
    [direct] = asyncio.run(inner.generate([_req(n=25, seed=5)]))
    assert [c.text for c in res.completions] == [c.text for c in direct.completions]


def test_cache_does_not_store_errors(tmp_path):
    from collapse_probe.models import GenerationResult

    class Failing:
        spec = "failing"

        async def generate(self, requests):
            return [GenerationResult([], error="HTTP 503 after 3 retries") for _ in requests]

    cache = ResponseCache(tmp_path / "c.sqlite")
    [res] = asyncio.run(CachedModel(Failing(), cache).generate([_req(n=3)]))
    assert not res.ok and "503" in res.error and len(cache) == 0


def test_rules_make_the_known_distribution_react_to_the_other_side(tmp_path):
    path = tmp_path / "donor.json"
    path.write_text(
        json.dumps(
            {
                "responses": [{"text": "No.", "p": 1.0}],
                "rules": [{"if_contains": ["children", "kids"], "responses": [{"text": "[DONATE $2]", "p": 1.0}]}],
            }
        )
    )
    model = get_model(f"scripted:{path}")
    plain = _req(msgs=[{"role": "user", "content": "Please donate."}])
    moved = _req(msgs=[{"role": "user", "content": "It helps CHILDREN in need."}])
    r_plain, r_moved = asyncio.run(model.generate([plain, moved]))
    assert r_plain.completions[0].text == "No." and r_moved.completions[0].text == "[DONATE $2]"
    assert asyncio.run(model.score_choices(moved, ["[DONATE $2]", "No."])) == [0.0, float("-inf")]


def test_malformed_rules_name_the_field(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"responses": [{"text": "a", "p": 1}], "rules": [{"if_contains": [], "responses": []}]}))
    with pytest.raises(ConfigError, match=r"rules\[0\]\.if_contains"):
        get_model(f"scripted:{path}")


def test_shipped_scripted_donors_react_as_their_descriptions_say():
    from pathlib import Path

    from collapse_probe.benchmarks.p4g import donation_reward, parse_donation

    root = Path(__file__).resolve().parents[2] / "collapse_probe" / "data" / "scripted"

    def expected_reward(name, persuader_text):
        model = get_model(f"scripted:{root / name}")
        dist = model.distribution(_req(msgs=[{"role": "user", "content": persuader_text}]))
        return sum(p * donation_reward(parse_donation(t)) for t, p in dist)

    cause, plain = "Your donation helps children in need.", "Good morning, nice weather today."
    assert expected_reward("p4g_donor_collapsed_cause.json", cause) > 0.9
    assert expected_reward("p4g_donor_collapsed_cause.json", plain) < 0.1
    assert expected_reward("p4g_donor_skeptic.json", cause) < expected_reward("p4g_donor_skeptic.json", plain)
    assert expected_reward("p4g_donor_diverse.json", cause) == pytest.approx(
        expected_reward("p4g_donor_diverse.json", plain)
    )


def test_cache_key_includes_the_backend_revision(tmp_path, write_scripted):
    inner = get_model(write_scripted([(f"r{i}", 0.1) for i in range(10)]))
    cache = ResponseCache(tmp_path / "c.sqlite")
    asyncio.run(CachedModel(inner, cache).generate([_req(n=5, seed=1)]))
    inner.cache_namespace = "decoder-v2"  # the backend's sampling code changed
    try:
        model = CachedModel(inner, cache)
        asyncio.run(model.generate([_req(n=5, seed=1)]))
        assert model.hits == 0 and model.misses == 5 and len(cache) == 10
    finally:
        del inner.cache_namespace
