"""REINFORCE over whole trajectories with group-relative advantages: training examples, loss masks, loss.

**Examples.** Every turn a trained side took becomes one sequence ``prompt_ids + completion_ids``:
``prompt_ids`` are the exact ids the backend conditioned on (``LocalModel.prompt_ids(request)``:
system prompt, history, the other side's turns) and ``completion_ids`` the exact ids it sampled
(``Completion.token_ids``, including the EOS/stop token that ended the turn, which the policy also
chose). The **loss mask** is 1 on exactly the completion tokens and 0 on every prompt token, so
history and the other side's tokens get no loss; a turn of the side that is not trained is never
turned into an example at all.

**Advantages.** A conversation's trajectory reward ``R`` is z-scored within its group (the ``G``
rollouts of one task) with the *population* standard deviation (``ddof=0``):
``A = (R - mean_g R) / (std_g R + eps)``; a group whose rewards are all equal gets ``A = 0`` exactly
and counts towards ``zero_std_share`` (:func:`~collapse_probe.trainers.advantages.group_relative_advantages`).
Every token of every turn of that conversation's trained side gets the conversation's ``A``.

**Loss.** With ``w`` an optional per-turn importance weight (1 on-policy) and ``N`` the number of
trained tokens in the whole update batch::

    loss = -(1/N) sum_turns A w sum_{t in turn} log pi_T(a_t | prefix)
           + kl_coef (1/N) sum_tokens [exp(ref_t - logp_t) - (ref_t - logp_t) - 1]

``pi_T`` is the model's softmax at the sampling temperature ``T`` (the distribution that sampled),
so the gradient is the REINFORCE estimator of the trajectory objective up to the constant ``1/N``
(token-level normalisation keeps the step size independent of turn lengths). The KL term is the
non-negative ``k3`` estimator of ``KL(pi || pi_ref)`` on the sampled tokens, ``pi_ref`` being the
same model with its LoRA adapter disabled.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from collapse_probe.errors import ConfigError, InfraError, require


@dataclass
class TrainingExample:
    """One turn of a trained side, ready for the update."""

    prompt_ids: list[int]
    """Ids the backend conditioned on (history included); no loss."""
    completion_ids: list[int]
    """Ids the backend sampled for this turn; every one gets the loss."""
    advantage: float
    """Group-relative advantage of the conversation this turn belongs to."""
    weight: float = 1.0
    """Importance weight of the turn (1 on-policy; ``min(1, pi_live/pi_played)`` for a pool snapshot)."""
    side: str = "policy"
    """Which side took the turn (``policy`` or ``simulator``)."""
    key: str = ""
    """Conversation key (``policy|simulator|task|rollout``)."""
    sampler_logprobs: list[float] | None = None
    """Per-token log-probabilities the rollout backend reported for ``completion_ids`` (at the
    sampling temperature), or ``None``: the learner compares them with its own to measure, and with
    ``tis_cap`` correct, the sampler / learner mismatch (vLLM samples in bf16 with its own kernels)."""

    def __post_init__(self) -> None:
        if not self.prompt_ids:
            raise ConfigError("a training example needs at least one prompt token")
        if not self.completion_ids:
            raise ConfigError("a training example needs at least one completion token")
        if not (math.isfinite(self.advantage) and math.isfinite(self.weight)):
            raise ConfigError(f"advantage and weight must be finite, got {self.advantage}, {self.weight}")


def examples_from_events(
    events: Sequence[Any],
    side_target: Mapping[str, str],
    advantages: Mapping[str, Mapping[str, float]],
    prompt_ids: Mapping[str, Callable[[Any], list[int]]],
) -> dict[str, list[TrainingExample]]:
    """Training examples from the engine's turn events (:class:`~collapse_probe.rollout.TurnEvent`).

    Args:
        events: every turn of the batch, in any order.
        side_target: which trained model learns from each side's turns (``{"policy": "policy"}``
            for a frozen simulator; ``{"policy": "policy", "simulator": "simulator"}`` for
            co-training; ``{"policy": "policy", "simulator": "policy"}`` for self-play). A side
            absent from it is never trained: its turns produce no example.
        advantages: per trained model, conversation key -> advantage. A conversation without an
            entry (an infrastructure failure, a group left out) produces no example.
        prompt_ids: per trained model, the function that gives the exact prompt ids of a request.

    Returns:
        Trained model name -> its examples.

    Raises:
        InfraError: a turn to be trained carries no sampled token ids.
    """
    out: dict[str, list[TrainingExample]] = {t: [] for t in dict.fromkeys(side_target.values())}
    for ev in events:
        target = side_target.get(ev.side)
        if target is None:
            continue
        key = ev.spec.key
        adv = advantages.get(target, {}).get(key)
        if adv is None:
            continue
        ids = ev.completion.token_ids
        if not ids:
            who = ev.spec.policy if ev.side == "policy" else ev.spec.simulator
            raise InfraError(
                f"{who}: the rollout backend returned no token ids for a sampled turn; the trainer needs the "
                "exact sampled ids (Completion.token_ids)"
            )
        lps = ev.completion.token_logprobs
        out[target].append(
            TrainingExample(
                prompt_ids=list(prompt_ids[target](ev.request)),
                completion_ids=[int(t) for t in ids],
                advantage=float(adv),
                side=ev.side,
                key=key,
                sampler_logprobs=[float(x) for x in lps] if lps is not None and len(lps) == len(ids) else None,
            )
        )
    return out


def build_sequence(prompt_ids: Sequence[int], completion_ids: Sequence[int]) -> tuple[list[int], list[int]]:
    """Input ids of one turn and its loss mask (1 exactly on the completion tokens).

    Example:
        >>> build_sequence([5, 6, 7], [8, 9])
        ([5, 6, 7, 8, 9], [0, 0, 0, 1, 1])
    """
    ids = [int(t) for t in prompt_ids] + [int(t) for t in completion_ids]
    return ids, [0] * len(prompt_ids) + [1] * len(completion_ids)


def collate(examples: Sequence[TrainingExample], pad_id: int) -> dict[str, list[list[int]]]:
    """Left-pad a micro-batch: ``input_ids``, ``attention_mask`` and ``loss_mask`` (pads: mask 0).

    ``loss_mask[i][j] == 1`` means token ``j`` of row ``i`` is a sampled completion token whose
    log-probability (predicted from position ``j - 1``) enters the loss. Left padding puts every
    row's completion in the last columns, so the forward pass only needs logits for the last
    ``max completion length + 1`` positions.
    """
    rows = [build_sequence(e.prompt_ids, e.completion_ids) for e in examples]
    width = max(len(ids) for ids, _ in rows)
    input_ids, attention, loss = [], [], []
    for ids, mask in rows:
        pad = width - len(ids)
        input_ids.append([pad_id] * pad + ids)
        attention.append([0] * pad + [1] * len(ids))
        loss.append([0] * pad + mask)
    return {"input_ids": input_ids, "attention_mask": attention, "loss_mask": loss}


def token_logprobs(model: Any, batch: Mapping[str, list[list[int]]], temperature: float = 1.0) -> tuple[Any, Any]:
    """Log-probabilities (with grad) of the masked tokens of a collated (left-padded) micro-batch.

    Position ids count real tokens only (as the decoder used when sampling), and logits are
    computed only for the trailing positions that predict a masked token.

    Returns:
        ``(logp, row)``: a 1-D tensor with one entry per masked token (row-major order) and the row
        index of each entry.
    """
    torch = require("torch", "train", "the REINFORCE update")
    device = next(model.parameters()).device
    ids = torch.tensor(batch["input_ids"], dtype=torch.long, device=device)
    attn = torch.tensor(batch["attention_mask"], dtype=torch.long, device=device)
    mask = torch.tensor(batch["loss_mask"], dtype=torch.bool, device=device)
    width = ids.shape[1]
    first = int(mask.float().argmax(dim=1).min()) if bool(mask.any()) else width - 1
    keep = max(width - first + 1, 2)  # logits at columns first-1 .. width-1
    keep = min(keep, width)
    positions = (attn.cumsum(-1) - 1).clamp(min=0)
    logits = model(input_ids=ids, attention_mask=attn, position_ids=positions, logits_to_keep=keep).logits
    cols = width - keep  # column of logits[:, 0]
    target_mask = mask[:, cols + 1 :]  # token j is predicted by the logits at column j - 1
    picked = logits[:, :-1][target_mask].float() / temperature
    targets = ids[:, cols + 1 :][target_mask]
    logp = torch.log_softmax(picked, dim=-1).gather(-1, targets[:, None])[:, 0]
    rows = torch.arange(ids.shape[0], device=device)[:, None].expand_as(target_mask)[target_mask]
    return logp, rows


def reinforce_objective(
    logp: Any,
    rows: Any,
    coef: Any,
    n_tokens: int,
    ref_logp: Any = None,
    kl_coef: float = 0.0,
    token_weight: Any = None,
) -> tuple[Any, Any]:
    """The loss of the module docstring for one micro-batch (its share of the batch normalisation).

    Args:
        logp: per-token log-probabilities (with grad), 1-D.
        rows: row index of each token.
        coef: per-row ``advantage * weight`` (tensor).
        n_tokens: trained tokens in the *whole* update batch (``N``).
        ref_logp: per-token reference log-probabilities (no grad), or ``None``.
        kl_coef: weight of the ``k3`` KL term.
        token_weight: per-token importance weights (no grad), or ``None`` for 1.

    Returns:
        ``(loss, kl_sum)``: the scalar loss and the summed ``k3`` of this micro-batch (0 without a reference).
    """
    torch = require("torch", "train", "the REINFORCE update")
    if n_tokens < 1:
        raise ConfigError(f"n_tokens must be >= 1, got {n_tokens}")
    per_token = coef[rows] if token_weight is None else coef[rows] * token_weight
    loss = -(per_token * logp).sum() / n_tokens
    kl = torch.zeros((), device=logp.device)
    if ref_logp is not None:
        diff = ref_logp - logp
        k3 = torch.exp(diff) - diff - 1.0
        kl = k3.sum()
        loss = loss + kl_coef * kl / n_tokens
    return loss, kl.detach()


def reinforce_backward(
    model: Any,
    examples: Sequence[TrainingExample],
    *,
    pad_id: int,
    temperature: float = 1.0,
    kl_coef: float = 0.0,
    micro_batch: int = 8,
    reference: Callable[[], contextlib.AbstractContextManager[Any]] | None = None,
    n_tokens: int | None = None,
    tis_cap: float | None = None,
) -> dict[str, float | None]:
    """Accumulate the gradient of the REINFORCE loss over ``examples`` (no optimizer step).

    Args:
        model: the trained causal LM (train mode is set here).
        examples: the update batch.
        pad_id: padding token id.
        temperature: sampling temperature of the rollouts.
        kl_coef: KL weight; when > 0, ``reference()`` must give a context in which ``model`` is the
            reference (e.g. ``peft_model.disable_adapter``).
        micro_batch: sequences per forward/backward pass.
        n_tokens: the normalisation ``N`` (default: the completion tokens of ``examples``); pass the
            count of the whole batch when turns whose coefficient is 0 were left out of ``examples``.
        tis_cap: truncated importance sampling for a rollout backend that is not the learner (vLLM):
            each token's term is weighted by ``min(pi_learner / pi_sampler, tis_cap)`` from the
            examples' ``sampler_logprobs`` (Yao et al. 2025, "off-policy RL from mismatched
            samplers"); ``None`` leaves the loss on-policy as sampled.

    Returns:
        ``{"loss", "kl", "n_tokens", "n_sequences", "logprob_mismatch", "tis_clipped_share"}`` with
        ``loss`` the batch loss, ``kl`` the mean per-token ``k3`` (0 when not computed),
        ``logprob_mismatch`` the mean ``|log pi_learner - log pi_sampler|`` per token over the
        examples that carry sampler log-probabilities (``None`` when none do) and
        ``tis_clipped_share`` the share of those tokens whose weight hit the cap (``None`` without ``tis_cap``).
    """
    torch = require("torch", "train", "the REINFORCE update")
    if kl_coef > 0 and reference is None:
        raise ConfigError("kl_coef > 0 needs a reference model context")
    if n_tokens is None:
        n_tokens = sum(len(e.completion_ids) for e in examples)
    if not examples or n_tokens == 0:
        return {"loss": 0.0, "kl": 0.0, "n_tokens": 0, "n_sequences": 0, "logprob_mismatch": None,
                "tis_clipped_share": None}  # fmt: skip
    if tis_cap is not None and not tis_cap > 0:
        raise ConfigError(f"tis_cap must be > 0 (or None), got {tis_cap}")
    model.train()
    device = next(model.parameters()).device
    # Long sequences together: less padding per micro-batch.
    order = sorted(range(len(examples)), key=lambda i: len(examples[i].prompt_ids) + len(examples[i].completion_ids))
    total_loss, total_kl = 0.0, 0.0
    mismatch_sum, mismatch_n, clipped = 0.0, 0, 0
    for start in range(0, len(order), micro_batch):
        chunk = [examples[i] for i in order[start : start + micro_batch]]
        batch = collate(chunk, pad_id)
        ref_logp = None
        if kl_coef > 0 and reference is not None:
            with torch.no_grad(), reference():
                ref_logp, _ = token_logprobs(model, batch, temperature)
        logp, rows = token_logprobs(model, batch, temperature)
        coef = torch.tensor([e.advantage * e.weight for e in chunk], dtype=logp.dtype, device=device)
        token_weight = None
        if all(e.sampler_logprobs is not None for e in chunk):
            sampler = torch.tensor(
                [x for e in chunk for x in e.sampler_logprobs or ()], dtype=logp.dtype, device=device
            )
            if sampler.shape == logp.shape:
                diff = logp.detach() - sampler
                mismatch_sum += float(diff.abs().sum())
                mismatch_n += int(diff.numel())
                if tis_cap is not None:
                    ratio = torch.exp(diff)
                    clipped += int((ratio > tis_cap).sum())
                    token_weight = ratio.clamp(max=tis_cap)
        loss, kl = reinforce_objective(logp, rows, coef, n_tokens, ref_logp, kl_coef, token_weight)
        loss.backward()
        total_loss += float(loss.detach())
        total_kl += float(kl)
    return {
        "loss": total_loss,
        "kl": total_kl / sum(len(e.completion_ids) for e in examples) if kl_coef > 0 else 0.0,
        "n_tokens": n_tokens,
        "n_sequences": len(examples),
        "logprob_mismatch": mismatch_sum / mismatch_n if mismatch_n else None,
        "tis_clipped_share": clipped / mismatch_n if (mismatch_n and tis_cap is not None) else None,
    }


def turn_logprob_sums(
    model: Any, examples: Sequence[TrainingExample], *, pad_id: int, temperature: float = 1.0, micro_batch: int = 8
) -> list[float]:
    """Summed log-probability of each example's completion under ``model`` (no grad)."""
    torch = require("torch", "train", "the REINFORCE update")

    out = [0.0] * len(examples)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for start in range(0, len(examples), micro_batch):
                chunk = list(examples[start : start + micro_batch])
                logp, rows = token_logprobs(model, collate(chunk, pad_id), temperature)
                sums = torch.zeros(len(chunk), dtype=torch.float64).index_add_(0, rows.cpu(), logp.double().cpu())
                for j, v in enumerate(sums.tolist()):
                    out[start + j] = v
    finally:
        if was_training:
            model.train()
    return out
