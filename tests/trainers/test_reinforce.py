"""Loss masks, examples, advantages and the REINFORCE objective against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from collapse_probe.benchmarks import Task, TurnPrompt
from collapse_probe.errors import ConfigError, InfraError
from collapse_probe.models import Completion, GenerationRequest
from collapse_probe.rollout import ConversationSpec, TurnEvent
from collapse_probe.trainers.advantages import group_advantages_by_key
from collapse_probe.trainers.reinforce import (
    TrainingExample,
    build_sequence,
    collate,
    examples_from_events,
    reinforce_objective,
)


def _event(side: str, prompt: str, token_ids: list[int] | None, rollout: int = 0) -> TurnEvent:
    spec = ConversationSpec(Task("t0", {}), rollout, "pol", "sim", seed=1)
    request = GenerationRequest(messages=({"role": "user", "content": prompt},), prompt=prompt)
    return TurnEvent(spec, side, 0, TurnPrompt([]), request, Completion("x", token_ids=token_ids), "x")


def _char_ids(request: GenerationRequest) -> list[int]:
    return [ord(c) for c in request.prompt]


def test_loss_mask_covers_exactly_the_trained_sides_completion_tokens():
    # A conversation: policy says [7, 8] after prompt "ab"; simulator answers [9] after "ab.."; policy again [5].
    events = [_event("policy", "ab", [7, 8]), _event("simulator", "abXY", [9]), _event("policy", "abXYZ", [5])]
    key = events[0].spec.key
    out = examples_from_events(events, {"policy": "policy"}, {"policy": {key: 0.5}}, {"policy": _char_ids})
    assert list(out) == ["policy"]
    ex = out["policy"]
    assert [e.completion_ids for e in ex] == [[7, 8], [5]]  # the simulator's turn is no example at all
    batch = collate(ex, pad_id=0)
    assert batch["input_ids"] == [[0, 0, 97, 98, 7, 8], [97, 98, 88, 89, 90, 5]]  # left padding
    assert batch["loss_mask"] == [[0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 1]]
    assert batch["attention_mask"] == [[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]]
    # Every completion token and nothing else carries loss.
    assert sum(map(sum, batch["loss_mask"])) == sum(len(e.completion_ids) for e in ex)


def test_cotrain_and_selfplay_route_simulator_turns():
    events = [_event("policy", "ab", [7]), _event("simulator", "abc", [9, 10])]
    key = events[0].spec.key
    co = examples_from_events(
        events,
        {"policy": "policy", "simulator": "simulator"},
        {"policy": {key: 1.0}, "simulator": {key: -1.0}},
        {"policy": _char_ids, "simulator": _char_ids},
    )
    assert [e.completion_ids for e in co["policy"]] == [[7]]
    assert [(e.completion_ids, e.advantage) for e in co["simulator"]] == [([9, 10], -1.0)]
    selfplay = examples_from_events(
        events, {"policy": "policy", "simulator": "policy"}, {"policy": {key: 2.0}}, {"policy": _char_ids}
    )
    assert [(e.side, e.advantage) for e in selfplay["policy"]] == [("policy", 2.0), ("simulator", 2.0)]


def test_uncredited_conversations_and_missing_token_ids():
    ev = _event("policy", "ab", [7])
    assert examples_from_events([ev], {"policy": "policy"}, {"policy": {}}, {"policy": _char_ids}) == {"policy": []}
    bad = _event("policy", "ab", None)
    with pytest.raises(InfraError, match="token ids"):
        examples_from_events([bad], {"policy": "policy"}, {"policy": {bad.spec.key: 1.0}}, {"policy": _char_ids})
    with pytest.raises(ConfigError):
        TrainingExample([1], [], 1.0)


def test_build_sequence():
    assert build_sequence([1, 2], [3]) == ([1, 2, 3], [0, 0, 1])


def test_group_advantages_population_std_and_zero_std_groups():
    groups = {"a": ["a0", "a1", "a2"], "b": ["b0", "b1"], "c": ["c0", "c1"], "d": ["d0"]}
    rewards = {"a0": 0.0, "a1": 0.5, "a2": 1.0, "b0": 0.3, "b1": 0.3, "c0": 1.0}  # c1 and d0: infra failures
    adv, share = group_advantages_by_key(groups, rewards, eps=0.0)
    std = math.sqrt(((0.5) ** 2 + 0 + 0.5**2) / 3)  # ddof=0
    assert adv["a0"] == pytest.approx(-0.5 / std) and adv["a2"] == pytest.approx(0.5 / std)
    assert adv["a1"] == pytest.approx(0.0)
    assert adv["b0"] == 0.0 and adv["b1"] == 0.0  # tied group
    assert adv["c0"] == 0.0 and "c1" not in adv  # one scored rollout: no contrast
    assert "d0" not in adv
    assert share == pytest.approx(2 / 3)  # groups a, b, c scored; b and c zero-std
    assert group_advantages_by_key({"a": ["x"]}, {}) == ({}, None)


def test_reinforce_objective_hand_computed():
    torch = pytest.importorskip("torch")
    logp = torch.tensor([-1.0, -2.0, -3.0], requires_grad=True)
    rows = torch.tensor([0, 0, 1])
    coef = torch.tensor([2.0, -1.0])
    loss, kl = reinforce_objective(logp, rows, coef, n_tokens=3)
    assert float(loss.detach()) == pytest.approx(-(2 * -1 + 2 * -2 + -1 * -3) / 3)
    loss.backward()
    assert logp.grad.tolist() == pytest.approx([-2 / 3, -2 / 3, 1 / 3])
    assert float(kl) == 0.0
    # k3 KL term: exp(d) - d - 1 with d = ref - logp.
    logp2 = torch.tensor([-1.0, -2.0], requires_grad=True)
    ref = torch.tensor([-1.5, -2.0])
    loss2, kl2 = reinforce_objective(logp2, torch.tensor([0, 0]), torch.tensor([0.0]), 2, ref, kl_coef=0.1)
    k3 = math.exp(-0.5) + 0.5 - 1
    assert float(kl2) == pytest.approx(k3)
    assert float(loss2.detach()) == pytest.approx(0.1 * k3 / 2)


def test_token_logprobs_match_manual_log_softmax():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from collapse_probe.trainers.reinforce import token_logprobs

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        vocab_size=32,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    model = transformers.LlamaForCausalLM(cfg).eval()
    ex = [TrainingExample([1, 2, 3], [4, 5], 1.0), TrainingExample([6], [7], -1.0)]
    batch = collate(ex, pad_id=0)
    with torch.no_grad():
        logp, rows = token_logprobs(model, batch, temperature=0.5)
        full = model(input_ids=torch.tensor([[1, 2, 3, 4, 5]])).logits[0].float()
        manual = torch.log_softmax(full / 0.5, -1)
        single = model(input_ids=torch.tensor([[6, 7]])).logits[0].float()
        manual2 = torch.log_softmax(single / 0.5, -1)
    # Row 0: tokens 4 (predicted at position 2) and 5 (position 3); row 1: token 7 (position 0).
    expected = [float(manual[2, 4]), float(manual[3, 5]), float(manual2[0, 7])]
    assert rows.tolist() == [0, 0, 1]
    assert np.allclose(logp.tolist(), expected, atol=1e-5)
