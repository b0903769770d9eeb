"""Sampling N responses per state through the response cache and measuring each state."""

from __future__ import annotations

import asyncio
import copy
import logging
import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np

from collapse_probe.benchmarks import Arena, Episode
from collapse_probe.benchmarks._base import audit_hook
from collapse_probe.errors import CacheError, InfraError, RunAbortedError
from collapse_probe.metrics.partitioners._base import apartition_states
from collapse_probe.models import Completion, GenerationRequest, GenerationResult, SamplingParams, derive_seed
from collapse_probe.models._answers import is_blank
from collapse_probe.models._batch import batch_chunk
from collapse_probe.pipelines.audit._config import SAMPLES, AuditConfig, ProbeState, state_kind
from collapse_probe.pipelines.audit._summary import _state_estimates
from collapse_probe.pipelines.audit._types import ExactDistribution, StateRecord, VSStats
from collapse_probe.pipelines.audit._views import NOT_READ, reward_reader, reward_view_of_state
from collapse_probe.rollout import RunDir, hash_str
from collapse_probe.simulators import Participant

logger = logging.getLogger(__name__)

# ----------------------------------------------------------------------------------------------- sampling


def _state_seed(seed: int, state_id: str) -> int:
    return derive_seed(seed, hash_str(state_id))


def _clean(arena: Arena, state: ProbeState, text: str) -> str:
    """The turn text as the arena would record it (e.g. P4G strips a repeated speaker tag)."""
    ep = Episode(state.episode.task, state.episode.seed, list(state.episode.messages), copy.copy(state.episode.state))
    arena.apply(ep, "simulator", Completion(text=text), text)
    return ep.messages[-1]["content"] if len(ep.messages) > len(state.episode.messages) else text


def _class_names(partitioner: Any, texts: list[str], labels: list[int]) -> list[str]:
    if hasattr(partitioner, "labels_for"):
        names = partitioner.labels_for(texts)
        out: dict[int, str] = {}
        for lab, name in zip(labels, names, strict=True):
            out.setdefault(lab, name)
        return [out[i] for i in range(len(out))]
    first: dict[int, str] = {}
    for lab, t in zip(labels, texts, strict=True):
        first.setdefault(lab, t)
    return [first[i][:80] for i in range(len(first))]


OUTSIDE = "outside the set"
"""The class of every answer outside a closed answer set."""


async def exact_closed_set_distribution(
    model: Any, request: GenerationRequest, answers: Sequence[tuple[str, str]]
) -> ExactDistribution | None:
    """Exact class distribution over a closed answer set plus the mass outside it, or ``None``
    when the model cannot score choices.

    Every answer of the set is scored as the whole reply (a transcript-style local model: as the
    continuation of the prompt, with the space that follows the speaker tag); answers of one class
    add up. The set rarely holds all of the model's probability, so the distribution is *not*
    renormalised over it: the rest, 1 − Σ p(answer), is the class ``"outside the set"``, and the
    exact ε = 1 − max over all classes including that one. ``collapse_error_conditional`` is ε of the
    distribution conditioned on answering inside the set (which overstates diversity or collapse
    when the set holds little mass; ``closed_set_mass`` says how little).

    Args:
        model: a backend with ``score_choices``.
        request: the state's request (one sample).
        answers: (answer text, class) pairs; answers should be prefix-free (e.g. end in a bracket).
    """
    from collapse_probe.metrics.estimators import exact_class_distribution, exact_collapse_error

    if not hasattr(model, "score_choices"):
        return None
    choices = [a for a, _ in answers]
    label = dict(answers)
    scored = [" " + c for c in choices] if getattr(model, "prompt_style", None) == "transcript" else choices
    logps = await model.score_choices(request, scored)
    probs: dict[str, float] = {}
    for c, lp in zip(choices, logps, strict=True):
        probs[label[c]] = probs.get(label[c], 0.0) + (math.exp(lp) if lp != float("-inf") else 0.0)
    mass = float(min(1.0, sum(probs.values())))
    full = {**probs, OUTSIDE: 1.0 - mass}
    out = ExactDistribution(
        distribution=full,
        collapse_error=exact_collapse_error(list(full.values())),
        closed_set_mass=mass,
        outside_mass=1.0 - mass,
        modal_class=max(full, key=full.__getitem__),
        distribution_conditional=None,
        collapse_error_conditional=None,
    )
    if mass > 0:
        cond = exact_class_distribution(dict(zip(choices, logps, strict=True)), label_of=lambda c: label[str(c)])
        out["distribution_conditional"] = {str(k): v for k, v in cond.items()}
        out["collapse_error_conditional"] = exact_collapse_error(cond)
    else:
        out["note"] = "the model gives every answer of the set probability 0"
    return out


async def exact_donation_distribution(model: Any, request: GenerationRequest) -> ExactDistribution | None:
    """:func:`exact_closed_set_distribution` over the P4G donation tags ``[DONATE $0]`` … ``[DONATE $2]``."""
    from collapse_probe.benchmarks.p4g import donation_answers

    return await exact_closed_set_distribution(model, request, donation_answers())


def state_context(state: ProbeState) -> str | None:
    """The message every reply at ``state`` answers: the policy's last message (``None`` before it
    spoke). A short reply's meaning is in it ("Yes." after "Would you donate?" agrees to give)."""
    return next((str(m.get("content") or "") for m in reversed(state.episode.messages) if m["role"] == "policy"),
                None)  # fmt: skip


def is_state_record(rec: Mapping[str, object]) -> TypeGuard[StateRecord]:
    """Whether a ``samples.jsonl`` line read back names its state and sampling mode (strings), as every
    record the audit writes does; its other fields are checked by
    :func:`~collapse_probe.results._samples.sample_problem` where a resumed audit reads them."""
    return isinstance(rec.get("state_id"), str) and isinstance(rec.get("mode"), str)


def state_header(state: ProbeState, mode: str, simulator: str) -> StateRecord:
    """The fields of a ``samples.jsonl`` record that say which state it measures."""
    return {
        "state_id": state.state_id,
        "mode": mode,
        "simulator": simulator,
        "source": state.source,
        "turn": state.turn,
        "task_id": state.episode.task.task_id,
        "conversation": state.conversation,
        "closed_set": state.closed_set,
        "kind": state_kind(state),
        "context": [{"role": m["role"], "content": m["content"]} for m in state.episode.messages[-4:]],
        "human_reply": state.human_reply,
    }


def measured_state(state: ProbeState, texts: list[str], labels: list[int], partitioner: Any, seed: int,
                   decide: Any = None, reward_read: Any = None) -> StateRecord:  # fmt: skip
    """The measurement of one state from its replies and their classes: class counts (modal class
    first), names and examples, the per-state estimates, the reward view where ``reward_read`` (from
    :func:`~collapse_probe.pipelines.audit._views.reward_reader`) reads the state, and at a state that asks for
    a decision the decision ε of ``decide`` (the benchmark's ``decision_label``)."""
    from collapse_probe.metrics.partitioners import class_counts

    counts = class_counts(labels)
    names = _class_names(partitioner, texts, labels)
    order = np.argsort(-counts, kind="stable")
    examples: dict[int, list[str]] = {}
    for lab, t in zip(labels, texts, strict=True):
        ex = examples.setdefault(lab, [])
        if t not in ex and len(ex) < 3:
            ex.append(t)
    rec: StateRecord = {
        "status": "ok",
        "n": len(texts),
        "class_counts": [int(counts[i]) for i in order],
        "class_names": [names[i] for i in order],
        "class_examples": [examples[int(i)] for i in order],
        "responses": texts,
        "labels": [int(np.flatnonzero(order == lab)[0]) for lab in labels],
        **_state_estimates(counts, texts, seed=_state_seed(seed, state.state_id)),
    }
    reward = reward_view_of_state(reward_read, state, texts, _state_seed(seed, state.state_id))
    if reward is not None:
        # each reply's reward class in sample-index order: the sequential verdict's hits need the order
        names = [NOT_READ if k is None else str(k) for k in (reward_read(state, t) for t in texts)]
        reward["labels"] = [reward["class_names"].index(k) for k in names]
        rec["reward_view"] = reward
    if decide is not None and state.closed_set:
        names_d = [str(decide(t)) for t in texts]
        dc = Counter(names_d).most_common()
        rec["decision"] = {"class_names": [k for k, _ in dc], "class_counts": [v for _, v in dc],
                           "collapse_error": 1.0 - dc[0][1] / len(texts)}  # fmt: skip
    return rec


def _n_candidates(vs_record: Mapping[str, object]) -> int:
    """How many candidates a Verbalized-Sampling turn's record lists (0 when it lists none)."""
    candidates = vs_record.get("candidates")
    return len(candidates) if isinstance(candidates, list) else 0


@dataclass
class _Sampler:
    """Samples and measures the states of one simulator mode."""

    arena: Arena
    participant: Participant
    partitioner: Any
    config: AuditConfig
    run_dir: RunDir | None
    done: dict[tuple[str, str], StateRecord]
    embedder: Any = None
    bar: Any = None
    samples: int | None = None
    """Replies per state to have at this look of the sequential audit (default ``config.samples``)."""

    @property
    def mode(self) -> str:
        return self.participant.mode

    @property
    def n_target(self) -> int:
        return self.samples or self.config.samples

    def _needs(self, state: ProbeState) -> bool:
        """A state is sampled when it has no record, or a measured record of fewer replies than this
        look asks for (the cache serves the earlier sample indices; the new ones are drawn)."""
        rec = self.done.get((state.state_id, self.mode))
        if rec is None:
            return True
        asked = int(rec.get("n") or 0) + int(rec.get("n_empty") or 0)
        return rec.get("status") == "ok" and asked < self.n_target

    def request(self, state: ProbeState) -> GenerationRequest:
        prompt = self.participant.transform_prompt(self.arena.prompt_for(state.episode, "simulator"))
        params = SamplingParams(temperature=self.config.rollout.temperature, top_p=self.config.top_p,
                                max_tokens=prompt.max_tokens, stop=tuple(prompt.stop),
                                seed=_state_seed(self.config.rollout.seed, state.state_id))  # fmt: skip
        return GenerationRequest(messages=tuple(prompt.messages), prompt=prompt.prompt, n=self.n_target,
                                 params=params, tools=tuple(prompt.tools) if prompt.tools else None)  # fmt: skip

    async def run(self, states: Sequence[ProbeState]) -> list[StateRecord]:
        todo = [s for s in states if self._needs(s)]
        batched = batch_chunk(self.participant.model, len(todo), self.n_target)  # a provider batch: all at once
        step = self.config.batch_states or batched or max(1, 64 // self.n_target)
        for start in range(0, len(todo), step):
            await self._chunk(todo[start : start + step])
        return [self.done[(s.state_id, self.mode)] for s in states if (s.state_id, self.mode) in self.done]

    async def _chunk(self, chunk: list[ProbeState]) -> None:
        requests = [self.request(s) for s in chunk]
        results: Sequence[GenerationResult | str]
        try:
            results = await self.participant.model.generate(requests)
            if len(results) != len(requests):
                raise InfraError(f"the backend returned {len(results)} results for {len(requests)} requests")
        except (CacheError, RunAbortedError):
            raise
        except Exception as exc:  # a backend that raises fails these states, not the audit
            results = [f"{type(exc).__name__}: {exc}"] * len(requests)
        ok: list[Any] = []
        for state, req, res in zip(chunk, requests, results, strict=True):
            if isinstance(res, str) or not res.ok or len(res.completions) != req.n:
                err = (
                    res
                    if isinstance(res, str)
                    else res.error or f"{len(res.completions)} of {req.n} completions returned"
                )
                self._finish(state, {"status": "infra_error", "error": err})
                continue
            texts, vs_records = self._replies(state, req, res.completions, 0)
            ok.append((state, req, texts, vs_records))
        ok = await self._retry_empty(ok)
        if not ok:
            return
        try:
            labels = await apartition_states(self.partitioner, [t for _, _, t, _, _ in ok],
                                             [state_context(s) for s, *_ in ok])  # fmt: skip
        except InfraError as exc:
            for state, *_ in ok:
                self._finish(state, {"status": "infra_error", "error": f"partitioner {self.partitioner.name}: {exc}"})
            return
        embeddings = None
        if self.embedder is not None:
            embeddings = await asyncio.to_thread(self.embedder.embed, [t for _, _, ts, _, _ in ok for t in ts])
        offset = 0
        for (state, req, texts, vs_records, n_empty), labs in zip(ok, labels, strict=True):
            rec = await self._measure(state, req, texts, vs_records, labs)
            rec["n_empty"] = n_empty
            if embeddings is not None:
                from collapse_probe.metrics.vendi import mean_pairwise_cosine, vendi_score

                emb = embeddings[offset : offset + len(texts)]
                rec["vendi"] = vendi_score(emb)
                rec["mean_pairwise_cosine"] = mean_pairwise_cosine(emb)
                if hasattr(self.partitioner, "domain_similarity"):
                    rec["domain_similarity"] = round(self.partitioner.domain_similarity(emb), 4)
            offset += len(texts)
            self._finish(state, rec)

    def _replies(self, state: ProbeState, req: GenerationRequest, completions: Sequence[Completion],
                 first: int) -> tuple[list[str], list[Mapping[str, object]]]:  # fmt: skip
        """Each completion's turn text (after the mode's post-processing and the arena's cleaning)."""
        texts: list[str] = []
        vs_records: list[Mapping[str, object]] = []
        for i, comp in enumerate(completions):
            rng = random.Random(derive_seed(req.params.seed or 0, 1_000_003 + first + i))
            text, info = self.participant.postprocess(comp, rng)
            texts.append(_clean(self.arena, state, text or ""))
            if "vs" in info:
                vs_records.append(info["vs"])
        return texts, vs_records

    async def _retry_empty(self, ok: list[Any]) -> list[Any]:
        """An empty (or null) reply is not a response: it is asked again once, as new sample indices
        after the state's N (fresh draws, cached like the others); what is still empty is dropped,
        counted in ``n_empty``, and a state left with fewer than 2 replies is an infrastructure
        failure. Counting empties as a class would put a spurious mode (or a spurious extra class)
        into ε̂."""
        empty = [(k, [i for i, t in enumerate(texts) if is_blank(t)]) for k, (_, _, texts, _) in enumerate(ok)]
        empty = [(k, idx) for k, idx in empty if idx]
        if empty:
            retry = [ok[k][1].with_samples(ok[k][1].n, len(idx)) for k, idx in empty]
            for (k, idx), req in zip(empty, retry, strict=True):  # counted in the run's retry summary
                logger.info("%s: %d empty replies at state %s; retry 1/1 as samples %d-%d", self.participant.label,
                            len(idx), ok[k][0].state_id, req.first_sample, req.first_sample + req.n - 1)  # fmt: skip
            results: list[Any]
            try:
                results = await self.participant.model.generate(retry)
            except (CacheError, RunAbortedError):
                raise
            except Exception:  # the retry is best effort: what it does not fill stays empty
                results = [None] * len(retry)
            for (k, idx), req, res in zip(empty, retry, results, strict=True):
                if res is None or not res.ok or len(res.completions) != req.n:
                    continue
                state, orig, texts, vs_records = ok[k]
                again, _ = self._replies(state, orig, res.completions, orig.n)
                for i, t in zip(idx, again, strict=True):
                    texts[i] = t
        out = []
        for state, req, texts, vs_records in ok:
            kept = [t for t in texts if not is_blank(t)]
            n_empty = len(texts) - len(kept)
            if len(kept) < 2:
                self._finish(state, {"status": "infra_error", "n_empty": n_empty,
                                     "error": f"{n_empty} of {len(texts)} replies empty after a retry"})  # fmt: skip
                continue
            out.append((state, req, kept, vs_records, n_empty))
        return out

    async def _measure(self, state: ProbeState, req: GenerationRequest, texts: list[str],
                       vs_records: list[Mapping[str, object]], labels: list[int]) -> StateRecord:  # fmt: skip
        rec = measured_state(state, texts, labels, self.partitioner, self.config.rollout.seed,
                             audit_hook(self.arena, "decision_label"), reward_reader(self.arena)[0])  # fmt: skip
        if vs_records:
            fails = [r for r in vs_records if not r.get("parse_ok")]
            rec["vs"] = VSStats(
                parse_failures=len(fails),
                failure_reasons=dict(Counter(str(r.get("failure_reason") or "unknown") for r in fails)),
                mean_candidates=float(np.mean([_n_candidates(r) for r in vs_records])),
                examples=vs_records[:2],
            )
        answers = audit_hook(self.arena, "closed_answers")
        if self.config.exact and state.closed_set and self.mode == "direct" and answers is not None:
            try:
                rec["exact"] = await exact_closed_set_distribution(
                    self.participant.model, req.with_samples(0, 1), answers()
                )
            except RunAbortedError:
                raise
            except Exception as exc:  # scoring is an extra: its failure is recorded, not fatal
                rec["exact"] = {"distribution": None, "collapse_error": None, "error": f"{type(exc).__name__}: {exc}"}
        return rec

    def _finish(self, state: ProbeState, rec: StateRecord) -> None:
        full: StateRecord = {**state_header(state, self.mode, self.participant.label), **rec}
        self.done[(state.state_id, self.mode)] = full
        if full.get("status") == "infra_error":
            from collapse_probe.core._observe import note_infra_failure

            note_infra_failure(error=str(full.get("error") or ""))
        if self.run_dir is not None:
            self.run_dir.append_jsonl(SAMPLES, full)
        if self.bar is not None:
            self.bar.update(1)
