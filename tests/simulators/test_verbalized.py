"""Verbalized Sampling: the prompt rewrite, robust parsing of every failure case, and sampling."""

from __future__ import annotations

import asyncio
import math
import random
from collections import Counter

import pytest

from collapse_probe.benchmarks.p4g import P4GArena
from collapse_probe.errors import ConfigError
from collapse_probe.models import get_model
from collapse_probe.rollout import EngineConfig, make_specs, run_conversations
from collapse_probe.simulators import Participant
from collapse_probe.simulators.verbalized import VS_PRIME, choose_verbalized, verbalized_prompt


def _p4g_prompt():
    arena = P4GArena(max_turns=2)
    task = arena.load_tasks(1)[0]
    ep = arena.new_episode(task, 0)
    ep.messages.append({"role": "policy", "content": "Would you donate to Save the Children?"})
    return arena.prompt_for(ep, "simulator")


def _choose(text, k=5, seed=0):
    return choose_verbalized(text, k=k, rng=random.Random(seed))


# ------------------------------------------------------------------------------------------- prompt


def test_prompt_asks_for_k_candidates_and_keeps_the_dialogue():
    base = _p4g_prompt()
    vs = verbalized_prompt(base, k=4)
    assert vs.max_tokens == 4 * (base.max_tokens + 12)
    # the single-line stop would cut the list after one candidate: dropped; speaker tags only at a line start
    assert "\n" not in vs.stop
    assert set(vs.stop) == {"\nPersuader:", "\nPersuadee:"}
    assert vs.prompt.endswith(VS_PRIME)
    assert "Persuader: Would you donate to Save the Children?" in vs.prompt
    assert "4 different replies the Persuadee" in vs.prompt
    assert not vs.prompt.rstrip(VS_PRIME).rstrip().endswith("Persuadee:")
    assert vs.messages[0]["role"] == "system" and "4 different replies" in vs.messages[0]["content"]
    assert [m["role"] for m in vs.messages] == [m["role"] for m in base.messages]
    # the direct prompt is not modified
    assert "different replies" not in base.messages[0]["content"] and base.stop[0] == "\n"


def test_prompt_rejects_k_below_2():
    with pytest.raises(
        ConfigError, match=r"--vs-k must be an integer in \[2, 100\] \(Verbalized Sampling needs at least 2"
    ):
        verbalized_prompt(_p4g_prompt(), k=1)


# ------------------------------------------------------------------------------------------- parsing


def test_numbered_lines_with_probabilities():
    c = _choose("1. (p=0.40) Sure, I'll give. [DONATE $1]\n2. (p=0.35) No thanks.\n3. (p=0.25) Maybe later.", k=3)
    assert c.parse_ok and c.failure_reason is None and c.fmt == "lines"
    assert c.candidates == ["Sure, I'll give. [DONATE $1]", "No thanks.", "Maybe later."]
    assert c.probs == pytest.approx([0.40, 0.35, 0.25])
    assert c.text == c.candidates[c.chosen]
    rec = c.to_record()
    assert rec["parse_ok"] is True and rec["candidates"] == c.candidates


def test_completion_that_starts_inside_the_primed_line():
    c = _choose("0.6) Yes, happy to help.\n2. (p=0.4) Not today.", k=2)
    assert c.parse_ok
    assert c.candidates == ["Yes, happy to help.", "Not today."]
    assert c.probs == pytest.approx([0.6, 0.4])


def test_json_in_a_code_fence_with_percentages():
    text = 'Here you go:\n```json\n[{"text": "Sure", "probability": "70%"}, {"response": "No", "p": 0.3}]\n```'
    c = _choose(text, k=2)
    assert c.parse_ok and c.fmt == "json"
    assert c.candidates == ["Sure", "No"] and c.probs == pytest.approx([0.7, 0.3])
    assert "code fence removed" in c.issues


@pytest.mark.parametrize(
    "text",
    ['{"responses": [{"reply": "a", "probability": 0.2}, {"reply": "b", "probability": 0.8}]}',
     '[["a", 0.2], ["b", 0.8]]', '{"a": 0.2, "b": 0.8}', "- (p=20%) a\n- (p=80%) b", "1. a (p=0.2)\n2. b (p=0.8)",
     "1) [p=0.2] a\n2) [p=0.8] b", "p=0.2: a\np=0.8: b", "1. (probability: 20) a\n2. (probability: 80) b"],
)  # fmt: skip
def test_other_formats(text):
    c = _choose(text, k=2)
    assert c.parse_ok, c
    assert c.candidates == ["a", "b"] and c.probs == pytest.approx([0.2, 0.8])


@pytest.mark.parametrize(
    "text",
    ["1. I can donate, 2\n2. No thanks, 1", "(2) I can donate\n(3) No thanks", "- 20%: I can donate\n- 80%: No",
     "1) [0.2] I can donate\n2) [0.8] No", "1. I can donate - 0.2\n2. No - 0.8"],
)  # fmt: skip
def test_numbers_outside_the_documented_field_are_not_probabilities(text):
    c = _choose(text, k=2)
    assert not c.parse_ok and c.failure_reason == "no valid probabilities", c
    assert len(c.candidates) == 2 and c.probs == pytest.approx([0.5, 0.5])


@pytest.mark.parametrize("text", ["third reply", "The third reply.", "1. (p=0.5) Reply 2\n2. (p=0.5) the first one"])
def test_a_pick_among_replies_is_a_failure_not_a_reply(text):
    c = _choose(text, k=2)
    assert not c.parse_ok and c.failure_reason == "a pick among replies, not replies" and c.text == ""


def test_probabilities_that_do_not_sum_to_one_are_renormalised():
    c = _choose("1. (p=0.6) a\n2. (p=0.6) b\n3. (p=0.3) c", k=3)
    assert c.parse_ok
    assert c.probs == pytest.approx([0.4, 0.4, 0.2]) and math.isclose(sum(c.probs), 1.0)
    assert any("renormalised" in i for i in c.issues)


def test_nan_negative_and_missing_probabilities_share_the_leftover_mass():
    c = _choose("1. (p=nan) a\n2. (p=-0.3) b\n3. c\n4. (p=0.4) d", k=4)
    assert c.parse_ok
    # 0.6 left by the valid one, shared equally by the three repaired ones
    assert c.probs == pytest.approx([0.2, 0.2, 0.2, 0.4])
    note = next(i for i in c.issues if "repaired" in i)
    assert note.startswith("3 ") and all(w in note for w in ("missing", "NaN", "negative"))
    assert math.isnan(c.raw_probs[0]) and c.raw_probs[1] == -0.3 and c.raw_probs[2] is None
    assert c.to_record()["raw_probs"][0] is None  # NaN is not valid JSON


def test_repaired_probabilities_when_nothing_is_left_get_the_mean():
    c = _choose("1. (p=0.7) a\n2. (p=0.5) b\n3. c", k=3)
    assert c.probs == pytest.approx([0.7 / 1.8, 0.5 / 1.8, 0.6 / 1.8])


def test_no_valid_probabilities_is_a_failure_sampled_uniformly():
    c = _choose("1. a\n2. b\n3. c", k=3)
    assert not c.parse_ok and c.failure_reason == "no valid probabilities"
    assert c.probs == pytest.approx([1 / 3] * 3) and c.text in ("a", "b", "c")


def test_all_zero_probabilities_is_a_failure():
    c = _choose("1. (p=0) a\n2. (p=0) b", k=2)
    assert not c.parse_ok and c.failure_reason == "probabilities sum to 0"
    assert c.probs == [0.5, 0.5]


def test_too_few_candidates():
    one = _choose("1. (p=1.0) Only this.", k=5)
    assert not one.parse_ok and one.failure_reason == "too few candidates (1 of 5)" and one.text == "Only this."
    three = _choose("1. (p=0.5) a\n2. (p=0.3) b\n3. (p=0.2) c", k=5)
    assert three.parse_ok and "too few candidates (3 of 5)" in three.issues


def test_more_than_k_candidates_keeps_the_first_k():
    c = _choose("\n".join(f"{i}. (p=0.2) r{i}" for i in range(1, 6)), k=3)
    assert c.parse_ok and c.candidates == ["r1", "r2", "r3"] and c.probs == pytest.approx([1 / 3] * 3)


def test_empty_output():
    for text in ("", "   \n  "):
        c = _choose(text)
        assert not c.parse_ok and c.failure_reason == "empty output" and c.text == "" and c.candidates == []


def test_unparseable_output_falls_back_to_the_first_line():
    c = _choose("I am not sure what you mean.\nLet me think.")
    assert not c.parse_ok and c.failure_reason == "no candidate list found"
    assert c.text == "I am not sure what you mean."


def test_sampling_follows_the_verbalized_probabilities():
    text = "1. (p=0.7) a\n2. (p=0.2) b\n3. (p=0.1) c"
    rng = random.Random(1)
    counts = Counter(choose_verbalized(text, 3, rng).text for _ in range(4000))
    for t, p in (("a", 0.7), ("b", 0.2), ("c", 0.1)):
        assert abs(counts[t] / 4000 - p) < 4 * math.sqrt(p * (1 - p) / 4000)
    assert _choose(text, 3, seed=5).text == _choose(text, 3, seed=5).text


# ------------------------------------------------------------------------------------------- in a conversation


def test_vs_simulator_in_the_engine_records_choices_and_counts_failures(write_scripted):
    pol = write_scripted([("Please donate.", 1.0)], name="pol.json")
    good = write_scripted([("1. (p=0.5) Sure [DONATE $2]\n2. (p=0.5) No [DONATE $0]", 1.0)], name="good.json")
    bad = write_scripted([("I refuse to make a list.", 1.0)], name="bad.json")
    arena = P4GArena(max_turns=1)
    parts = {pol: Participant(pol, get_model(pol)), "vs:good": Participant("vs:good", get_model(good), "verbalized", 2),
             "vs:bad": Participant("vs:bad", get_model(bad), "verbalized", 2)}  # fmt: skip
    specs = make_specs(arena.load_tasks(4), [pol], ["vs:good", "vs:bad"], rollouts=5, seed=0)
    records = asyncio.run(run_conversations(arena, specs, parts, config=EngineConfig(progress=False)))
    good_recs = [r for r in records if r.simulator == "vs:good"]
    assert {r.reward for r in good_recs} == {0.0, 1.0}  # both candidates are sampled
    meta = (good_recs[0].messages[1].meta or {})["vs"]
    assert meta["parse_ok"] and len(meta["candidates"]) == 2
    assert parts["vs:good"].stats["vs_parse_failures"] == 0
    # the unparseable simulator: every turn (the reply and the elicitation) falls back and is counted
    assert parts["vs:bad"].stats["vs_parse_failures"] == parts["vs:bad"].stats["turns"] == 40
