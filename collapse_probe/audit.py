"""``audit``: how collapsed is a simulator, where, with confidence intervals, and does Verbalized
Sampling help.

Pipeline:

1. **Probe states.** From the benchmark's data (P4G: for each donor persona, the state after the
   persuader's opening message and the closing donation-elicitation state; with ``human`` the
   prefixes of real P4G dialogues), and *on-policy* states: the simulator turns that rollouts of
   ``policy`` against the simulator actually visit (Definition 3.1).
2. **Sampling.** At every state the simulator draws N responses in one request (``n=N``, a seed per
   state) through the response cache, whose key holds the sample index: a cached audit replays the
   same N *independent* draws. States are batched into one ``generate`` call per chunk.
3. **Estimators per state** (:mod:`collapse_probe.metrics`): the chosen partitioner maps the N
   responses to equivalence classes; ε̂ = 1 − max_count/N with its CI, the bias-corrected ε, entropy
   (Chao–Wang–Jost, nats) with CI, Hill numbers, distinct-n, Vendi with embeddings. Where the model
   scores a closed answer set (``score_choices``) the P4G elicitation state gets the *exact*
   distribution over donation amounts and the exact ε.
4. **Trajectory** (on-policy): ε per turn, accumulated ε̄_H, the gradient-bias bound 2·B·R_max·ε̄_H,
   and optionally the simulator's share of reward variance (Lemma 3.3) by nested resampling.
5. **Verbalized Sampling** (``compare_vs``): the same states audited in direct and ``vs:`` modes,
   with the paired difference and the VS parse failures.
6. **Human reference** (``human``): simulated vs human donations (Wasserstein, KS, L1 over binned
   amounts) and response diversity vs the human persuadees' replies at the same prefixes.

Every state's record is appended to ``samples.jsonl`` as soon as it is done (resumable, no
duplicates). A backend error at a state is an infrastructure failure: the state is recorded as
such, excluded from every estimate and counted.
"""

from __future__ import annotations

import asyncio
import copy
import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from collapse_probe._version import __version__
from collapse_probe.benchmarks import Arena, Episode, Task
from collapse_probe.errors import ConfigError, InfraError
from collapse_probe.models import Completion, GenerationRequest, SamplingParams, derive_seed
from collapse_probe.rollout import EngineConfig, RunDir, make_specs, run_conversations
from collapse_probe.rollout._engine import hash_str
from collapse_probe.simulators import Participant

SCHEMA = "collapse-probe/audit/v1"
SAMPLES = "samples.jsonl"
PARTITIONS = ("exact", "embedding", "judge", "label")
P4G_OPENINGS = (
    "Hi! How are you doing today? Have you heard of the charity Save the Children?",
    "Hello there! Would you be willing to donate some of your task payment to Save the Children?",
    "Hey, how's it going? Do you ever donate to charities that help kids?",
    "Hi! I'm collecting donations for Save the Children, which helps children in developing countries. Could you spare part of your $2?",
)
"""Fixed human-style persuader openings, used when no policy writes the opening (P4G)."""
P4G_AMOUNTS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0)
"""The closed answer set at the P4G elicitation state: donations on a $0.25 grid from $0 to $2."""
DONATION_BINS = (0.0, 1e-9, 0.5, 1.0, 1.5, 2.0)
"""Bin edges for the L1 distance between donation distributions: $0, (0, .5], (.5, 1], (1, 1.5], (1.5, 2]."""


@dataclass
class AuditConfig:
    """Configuration of an ``audit`` run (the CLI, the Python API and ``config.json`` share it)."""

    sim: str = "smollm2"
    """Simulator spec; ``vs:SPEC`` audits the Verbalized-Sampling mode."""
    benchmark: str = "p4g"
    policy: str | None = None
    """Policy spec. Given: on-policy states from rollouts against the simulator (and the opening is
    the policy's own). ``None``: probe states with fixed human-style openings."""
    states: int = 2
    """Number of tasks (P4G personas) probed; each gives an opening and an elicitation state, or
    the simulator turns of ``rollouts`` on-policy conversations."""
    samples: int = 20
    """N, responses sampled per state (N < 20 is flagged low-confidence)."""
    partition: str | None = None
    """``exact | embedding | judge | label``; ``None`` picks ``label`` for p4g (the donate/refuse
    decision and the amount are what the reward reads) and ``exact`` otherwise."""
    judge: str | None = None
    """Judge model spec for ``partition="judge"`` (default: the simulator's model)."""
    compare_vs: bool = False
    """Audit the direct and the ``vs:`` mode on the same states and report the difference."""
    vs_k: int = 5
    human: str | None = None
    """Directory with the official P4G CSVs (``full_info.csv``, ``full_dialog.csv``)."""
    rollouts: int = 1
    """On-policy conversations per task."""
    max_turns: int | None = 3
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int = 0
    epsilon_star: float = 0.2
    """ε*: the simulator is called ε*-collapsed when the upper end of the CI of the mean ε̂ is below it."""
    bound_b: float = 1.0
    """B, bound on the norm of the trajectory score function, for the gradient-bias bound."""
    r_max: float = 1.0
    """R_max, bound on |R| (P4G rewards lie in [0, 1])."""
    variance_share: bool = False
    """Measure the simulator's share of reward variance by nested resampling (extra rollouts)."""
    variance_agents: int = 3
    """Agent prefixes (agent seeds) per task for the variance share."""
    variance_sims: int = 4
    """Simulator continuations per agent prefix for the variance share."""
    exact: bool = True
    """Compute the exact class distribution where the model scores a closed answer set."""
    vendi: bool = False
    """Embed responses for the Vendi score (always on with ``partition="embedding"``)."""
    n_boot: int = 1000
    """Bootstrap resamples for the summary CIs."""
    batch_states: int | None = None
    """States sampled per ``generate`` call (each state's record is appended as its call finishes);
    ``None``: about 64 responses per call (``max(1, 64 // samples)``), which fills the local
    backend's micro-batches and still moves the progress bar often."""
    personas: str | None = None
    """P4G persona file (JSONL); default: the shipped personas."""

    def validate(self) -> None:
        """Check every field once, naming the flag, the allowed values and the value received."""
        if isinstance(self.samples, bool) or not isinstance(self.samples, int) or self.samples < 2:
            raise ConfigError(
                f"--samples must be an integer >= 2 (a collapse error needs at least 2 responses per state), got {self.samples!r}"
            )
        for name in ("states", "rollouts", "max_turns", "vs_k", "batch_states", "variance_agents", "variance_sims"):
            v = getattr(self, name)
            if v is None and (name == "batch_states" or (name == "max_turns" and self.benchmark != "p4g")):
                continue  # tau2 has no turn cap by default
            least = 2 if name in ("vs_k", "variance_sims") else 1
            if isinstance(v, bool) or not isinstance(v, int) or v < least:
                raise ConfigError(f"--{name.replace('_', '-')} must be an integer >= {least}, got {v!r}")
        if self.partition is not None and self.partition not in PARTITIONS:
            raise ConfigError(f"--partition must be one of {', '.join(PARTITIONS)}, got {self.partition!r}")
        if not 0 < self.epsilon_star < 1:
            raise ConfigError(f"--epsilon-star must be in (0, 1), got {self.epsilon_star}")
        for name in ("bound_b", "r_max"):
            v = getattr(self, name)
            if not math.isfinite(v) or v <= 0:
                raise ConfigError(f"--{name.replace('_', '-')} must be a positive number, got {v}")
        if self.n_boot < 100:
            raise ConfigError(f"n_boot must be >= 100, got {self.n_boot}")
        if self.benchmark != "p4g" and self.policy is None:
            raise ConfigError(
                f"--benchmark {self.benchmark}: probe states are built for p4g only; give --policy SPEC to audit "
                "the on-policy states of rollouts on this benchmark"
            )
        if self.human is not None and self.benchmark != "p4g":
            raise ConfigError(
                "--human: the human reference is the official Persuasion-for-Good data; use --benchmark p4g"
            )

    @property
    def partitioner_name(self) -> str:
        return self.partition or ("label" if self.benchmark == "p4g" else "exact")


@dataclass
class ProbeState:
    """A simulator turn to audit: the episode up to (not including) the simulator's reply."""

    state_id: str
    source: str
    """``"opening"``, ``"elicitation"``, ``"human"`` or ``"on_policy"``."""
    turn: int
    """Number of earlier simulator turns in the conversation."""
    episode: Episode
    closed_set: bool = False
    """The state asks for a donation amount: the exact distribution over amounts applies."""
    conversation: str | None = None
    """Key of the on-policy conversation the state comes from."""
    human_reply: str | None = None
    """The human persuadee's actual reply at this prefix (human states)."""


# ----------------------------------------------------------------------------------------------- states


def _episode(arena: Arena, task: Task, messages: list[dict[str, Any]], elicited: bool = False) -> Episode:
    ep = arena.new_episode(task, 0)
    ep.messages = [dict(m) for m in messages]
    if "rounds" in ep.state:
        ep.state["rounds"] = sum(1 for m in messages if m["role"] == "simulator")
    if "elicited" in ep.state:
        ep.state["elicited"] = elicited
    return ep


def p4g_probe_states(arena: Arena, tasks: Sequence[Task], openings: dict[str, str] | None = None) -> list[ProbeState]:
    """P4G probe states per persona: the reply to the opening, and the donation decision.

    Args:
        arena: the P4G arena.
        tasks: donor personas.
        openings: task id -> persuader opening (e.g. written by the policy); default: the fixed
            human-style :data:`P4G_OPENINGS`, one per persona in turn.
    """
    from collapse_probe.benchmarks.p4g import ELICITATION

    states = []
    for i, task in enumerate(tasks):
        opening = (openings or {}).get(task.task_id) or P4G_OPENINGS[i % len(P4G_OPENINGS)]
        first = [{"role": "policy", "content": opening}]
        states.append(ProbeState(f"opening:{task.task_id}", "opening", 0, _episode(arena, task, first)))
        elicit = first + [{"role": "policy", "content": ELICITATION, "meta": {"elicitation": True}}]
        states.append(
            ProbeState(
                f"elicitation:{task.task_id}", "elicitation", 0, _episode(arena, task, elicit, True), closed_set=True
            )
        )
    return states


def human_probe_states(arena: Arena, dialogues: Sequence[Any], n: int, max_turns: int, seed: int) -> list[ProbeState]:
    """Prefixes of real P4G dialogues ending in a persuader turn, at a seeded depth in the first
    ``max_turns`` persuader turns; the human persuadee's actual next reply is kept for comparison."""
    from collapse_probe.benchmarks.p4g import SCORE_FIELDS

    usable = [
        d for d in dialogues
        if d.persuadee and all(d.persuadee.get(k) is not None for k in SCORE_FIELDS) and len(d.turns) >= 2
    ]  # fmt: skip
    if not usable:
        raise ConfigError("--human: no dialogue with a complete persuadee survey and at least 2 turns was found")
    rng = random.Random(seed)
    rng.shuffle(usable)
    states = []
    for d in usable[:n]:
        ends = [i + 1 for i, (spk, _) in enumerate(d.turns) if spk == "policy" and i + 1 < len(d.turns)
                and d.turns[i + 1][0] == "simulator"][:max_turns]  # fmt: skip
        if not ends:
            continue
        k = rng.choice(ends)
        ep = arena.episode_from_dialogue(d, k)  # type: ignore[attr-defined]
        states.append(ProbeState(f"human:{d.dialogue_id}:{k}", "human", ep.turns("simulator"), ep,
                                 human_reply=d.turns[k][1]))  # fmt: skip
    return states


def on_policy_states(arena: Arena, records: Sequence[dict[str, Any]], tasks: dict[str, Task]) -> list[ProbeState]:
    """The simulator turns that rollouts visited (Definition 3.1), rebuilt from conversation records.

    The state of the simulator turn at message index m is the record's first m messages. It is
    rebuilt from the record rather than captured live so that a resumed run (whose conversations
    are read back, not replayed) audits the same states, and so that the arena's *direct* prompt
    is audited whatever mode drove the rollouts.
    """
    states = []
    for rec in records:
        if rec.get("status") == "infra_error":
            continue
        task = tasks[rec["task_id"]]
        msgs = rec["messages"]
        for m_idx, m in enumerate(msgs):
            if m["role"] != "simulator":
                continue
            prefix = msgs[:m_idx]
            elicit = any((p.get("meta") or {}).get("elicitation") for p in prefix)
            last_is_elicitation = bool(prefix and (prefix[-1].get("meta") or {}).get("elicitation"))
            turn = sum(1 for p in prefix if p["role"] == "simulator")
            states.append(ProbeState(
                f"on_policy:{rec['key']}:{m_idx}", "on_policy", turn, _episode(arena, task, prefix, elicit),
                closed_set=last_is_elicitation, conversation=rec["key"],
            ))  # fmt: skip
    return states


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


def _amount_choice(x: float) -> str:
    return f"[DONATE ${int(x)}]" if float(x).is_integer() else f"[DONATE ${x:.2f}]"


async def exact_donation_distribution(model: Any, request: GenerationRequest) -> dict[str, Any] | None:
    """Exact distribution over the P4G donation amounts at an elicitation state, or ``None`` when the
    model cannot score choices.

    The choices are ``[DONATE $0]`` … ``[DONATE $2]`` (prefix-free: the closing bracket ends each).
    A transcript-style local model scores them as the continuation of the prompt (with the space
    that follows the speaker tag); a scripted model as the whole response. The distribution is the
    model's, *conditioned on answering inside the set*; ``closed_set_mass`` is the probability of
    the set itself.
    """
    from collapse_probe.metrics.estimators import exact_class_distribution, exact_collapse_error
    from collapse_probe.metrics.partitioners import p4g_label

    if not hasattr(model, "score_choices"):
        return None
    choices = [_amount_choice(a) for a in P4G_AMOUNTS]
    scored = [" " + c for c in choices] if getattr(model, "prompt_style", None) == "transcript" else choices
    logps = await model.score_choices(request, scored)
    mass = float(sum(math.exp(lp) for lp in logps if lp != float("-inf")))
    if mass <= 0:
        return {"distribution": None, "collapse_error": None, "closed_set_mass": 0.0,
                "note": "the model gives every donation amount probability 0"}  # fmt: skip
    dist = exact_class_distribution(dict(zip(choices, logps, strict=True)), label_of=lambda c: p4g_label(str(c)))
    return {"distribution": {str(k): v for k, v in dist.items()}, "collapse_error": exact_collapse_error(dist),
            "closed_set_mass": mass, "modal_class": str(max(dist, key=dist.__getitem__))}  # fmt: skip


def _state_estimates(counts: np.ndarray, texts: list[str], seed: int) -> dict[str, Any]:
    from collapse_probe.metrics.estimators import (
        collapse_error,
        collapse_error_ci,
        collapse_error_corrected,
        entropy,
        entropy_ci,
        hill_number,
        low_confidence,
        sample_coverage,
    )
    from collapse_probe.metrics.vendi import distinct_n

    n = int(counts.sum())
    return {
        "collapse_error": collapse_error(counts),
        "collapse_error_ci95": list(collapse_error_ci(counts)),
        "collapse_error_corrected": collapse_error_corrected(counts, seed=seed),
        "entropy": entropy(counts),
        "entropy_ci95": list(entropy_ci(counts, seed=seed)),
        "entropy_plugin": entropy(counts, "plugin"),
        "entropy_miller_madow": entropy(counts, "miller_madow"),
        "hill": {
            "0": hill_number(counts, 0),
            "1": hill_number(counts, 1),
            "2": hill_number(counts, 2),
            "inf": hill_number(counts, float("inf")),
        },  # fmt: skip
        "sample_coverage": sample_coverage(counts),
        "distinct_1": distinct_n(texts, 1),
        "distinct_2": distinct_n(texts, 2),
        "low_confidence": low_confidence(n),
    }


@dataclass
class _Sampler:
    """Samples and measures the states of one simulator mode."""

    arena: Arena
    participant: Participant
    partitioner: Any
    config: AuditConfig
    run_dir: RunDir | None
    done: dict[tuple[str, str], dict[str, Any]]
    embedder: Any = None
    bar: Any = None

    @property
    def mode(self) -> str:
        return self.participant.mode

    def request(self, state: ProbeState) -> GenerationRequest:
        prompt = self.participant.transform_prompt(self.arena.prompt_for(state.episode, "simulator"))
        params = SamplingParams(temperature=self.config.temperature, top_p=self.config.top_p,
                                max_tokens=prompt.max_tokens, stop=tuple(prompt.stop),
                                seed=_state_seed(self.config.seed, state.state_id))  # fmt: skip
        return GenerationRequest(messages=tuple(prompt.messages), prompt=prompt.prompt, n=self.config.samples,
                                 params=params, tools=tuple(prompt.tools) if prompt.tools else None)  # fmt: skip

    async def run(self, states: Sequence[ProbeState]) -> list[dict[str, Any]]:
        todo = [s for s in states if (s.state_id, self.mode) not in self.done]
        step = self.config.batch_states or max(1, 64 // self.config.samples)
        for start in range(0, len(todo), step):
            await self._chunk(todo[start : start + step])
        return [self.done[(s.state_id, self.mode)] for s in states if (s.state_id, self.mode) in self.done]

    async def _chunk(self, chunk: list[ProbeState]) -> None:
        requests = [self.request(s) for s in chunk]
        results: list[Any]
        raise_msg: str | None = None
        try:
            results = await self.participant.model.generate(requests)
            if len(results) != len(requests):
                raise InfraError(f"the backend returned {len(results)} results for {len(requests)} requests")
        except Exception as exc:  # a backend that raises fails these states, not the audit
            results = [None] * len(requests)
            raise_msg = f"{type(exc).__name__}: {exc}"
        ok: list[tuple[ProbeState, GenerationRequest, list[str], list[dict[str, Any]]]] = []
        for state, req, res in zip(chunk, requests, results, strict=True):
            if res is None or not res.ok or len(res.completions) != req.n:
                err = (
                    raise_msg if res is None else res.error or f"{len(res.completions)} of {req.n} completions returned"
                )
                self._finish(state, {"status": "infra_error", "error": err})
                continue
            texts, vs_records = [], []
            for i, comp in enumerate(res.completions):
                rng = random.Random(derive_seed(req.params.seed or 0, 1_000_003 + i))
                text, info = self.participant.postprocess(comp, rng)
                texts.append(_clean(self.arena, state, text))
                if "vs" in info:
                    vs_records.append(info["vs"])
            ok.append((state, req, texts, vs_records))
        if not ok:
            return
        try:
            labels = await self.partitioner.apartition_many([t for _, _, t, _ in ok])
        except InfraError as exc:
            for state, *_ in ok:
                self._finish(state, {"status": "infra_error", "error": f"partitioner {self.partitioner.name}: {exc}"})
            return
        embeddings = None
        if self.embedder is not None:
            embeddings = await asyncio.to_thread(self.embedder.embed, [t for _, _, ts, _ in ok for t in ts])
        offset = 0
        for (state, req, texts, vs_records), labs in zip(ok, labels, strict=True):
            rec = await self._measure(state, req, texts, vs_records, labs)
            if embeddings is not None:
                from collapse_probe.metrics.vendi import mean_pairwise_cosine, vendi_score

                emb = embeddings[offset : offset + len(texts)]
                rec["vendi"] = vendi_score(emb)
                rec["mean_pairwise_cosine"] = mean_pairwise_cosine(emb)
            offset += len(texts)
            self._finish(state, rec)

    async def _measure(self, state: ProbeState, req: GenerationRequest, texts: list[str],
                       vs_records: list[dict[str, Any]], labels: list[int]) -> dict[str, Any]:  # fmt: skip
        from collapse_probe.metrics.partitioners import class_counts

        counts = class_counts(labels)
        names = _class_names(self.partitioner, texts, labels)
        order = np.argsort(-counts, kind="stable")
        examples: dict[int, list[str]] = {}
        for lab, t in zip(labels, texts, strict=True):
            ex = examples.setdefault(lab, [])
            if t not in ex and len(ex) < 3:
                ex.append(t)
        rec: dict[str, Any] = {
            "status": "ok",
            "n": len(texts),
            "class_counts": [int(counts[i]) for i in order],
            "class_names": [names[i] for i in order],
            "class_examples": [examples[int(i)] for i in order],
            "n_empty": sum(1 for t in texts if not t.strip()),
            "responses": texts,
            "labels": [int(np.flatnonzero(order == lab)[0]) for lab in labels],
            **_state_estimates(counts, texts, seed=_state_seed(self.config.seed, state.state_id)),
        }
        if vs_records:
            fails = [r for r in vs_records if not r.get("parse_ok")]
            rec["vs"] = {
                "parse_failures": len(fails),
                "failure_reasons": dict(Counter(r.get("failure_reason") or "unknown" for r in fails)),
                "mean_candidates": float(np.mean([len(r.get("candidates") or []) for r in vs_records])),
                "examples": vs_records[:2],
            }
        if self.config.exact and state.closed_set and self.mode == "direct" and self.config.benchmark == "p4g":
            try:
                rec["exact"] = await exact_donation_distribution(self.participant.model, req.with_samples(0, 1))
            except Exception as exc:  # scoring is an extra: its failure is recorded, not fatal
                rec["exact"] = {"distribution": None, "collapse_error": None, "error": f"{type(exc).__name__}: {exc}"}
        return rec

    def _finish(self, state: ProbeState, rec: dict[str, Any]) -> None:
        full = {
            "state_id": state.state_id,
            "mode": self.mode,
            "simulator": self.participant.label,
            "source": state.source,
            "turn": state.turn,
            "task_id": state.episode.task.task_id,
            "conversation": state.conversation,
            "closed_set": state.closed_set,
            "context": [{"role": m["role"], "content": m["content"]} for m in state.episode.messages[-4:]],
            "human_reply": state.human_reply,
            **rec,
        }
        self.done[(state.state_id, self.mode)] = full
        if self.run_dir is not None:
            self.run_dir.append_jsonl(SAMPLES, full)
        if self.bar is not None:
            self.bar.update(1)


# ----------------------------------------------------------------------------------------------- summaries


def _boot_ci(boot: np.ndarray, est: float, level: float, basic: bool) -> list[float]:
    alpha = 1 - level
    lo_q, hi_q = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    if basic:
        return [float(2 * est - hi_q), float(2 * est - lo_q)]
    return [float(lo_q), float(hi_q)]


def _eps_boot_matrix(counts_list: Sequence[np.ndarray], n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(S, B) plug-in ε̂ of B multinomial resamples of each state's N responses."""
    rows = []
    for c in counts_list:
        n = int(c.sum())
        draws = rng.multinomial(n, c / n, size=n_boot)
        rows.append(1.0 - draws.max(axis=1) / n)
    return np.array(rows)


def mean_collapse_error(counts_list: Sequence[Sequence[int]], n_boot: int = 1000, level: float = 0.95,
                        seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """Mean of the per-state ε̂ with a two-level bootstrap CI.

    Each bootstrap replicate resamples the states with replacement (the variation between states)
    and, inside every drawn state, its N responses multinomially (the sampling noise of each ε̂),
    then averages. The interval is the *basic* bootstrap interval (2·est − quantiles) because the
    plug-in max is biased upwards under resampling when classes tie, which puts percentile intervals
    on the wrong side of the truth (see :func:`collapse_probe.metrics.estimators.collapse_error_ci`);
    it is clipped to [0, 1]. With one state only the inner level remains.
    """
    cs = [np.asarray(c, dtype=np.int64) for c in counts_list]
    if not cs:
        return {"estimate": None, "ci95": None, "n_states": 0}
    rng = np.random.default_rng(seed)
    est_states = np.array([1.0 - c.max() / c.sum() for c in cs])
    est = float(est_states.mean())
    mat = _eps_boot_matrix(cs, n_boot, rng)
    idx = rng.integers(0, len(cs), size=(n_boot, len(cs))) if len(cs) > 1 else np.zeros((n_boot, 1), dtype=int)
    boot = mat[idx, np.arange(n_boot)[:, None]].mean(axis=1)
    lo, hi = _boot_ci(boot, est, level, basic=True)
    return {"estimate": est, "ci95": [max(0.0, min(lo, est)), min(1.0, max(hi, est))], "n_states": len(cs),
            "method": "two-level basic bootstrap (states, then responses within each state)"}  # fmt: skip


def mean_with_state_se(estimates: Sequence[float], cis: Sequence[Sequence[float]], n_boot: int = 1000,
                       level: float = 0.95, seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """Mean of per-state estimates with a two-level CI: states resampled, and each drawn state's
    estimate perturbed by a normal draw with the standard error implied by its own 95 % CI
    (for entropy: the extended-assemblage bootstrap of :func:`~collapse_probe.metrics.estimators.entropy_ci`)."""
    est = np.asarray(estimates, dtype=np.float64)
    if est.size == 0:
        return {"estimate": None, "ci95": None}
    se = np.array([(hi - lo) / (2 * 1.959964) for lo, hi in cis])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, est.size, size=(n_boot, est.size)) if est.size > 1 else np.zeros((n_boot, 1), dtype=int)
    boot = (est[idx] + se[idx] * rng.standard_normal(idx.shape)).mean(axis=1)
    lo, hi = _boot_ci(boot, float(est.mean()), level, basic=False)
    return {"estimate": float(est.mean()), "ci95": [max(0.0, lo), hi]}


def summarize_states(records: Sequence[dict[str, Any]], config: AuditConfig) -> dict[str, Any]:
    """The summary block of ``results.json`` over the measured states of one mode."""
    from collapse_probe.metrics.estimators import MIN_CONFIDENT_SAMPLES

    ok = [r for r in records if r.get("status") == "ok"]
    infra = [r for r in records if r.get("status") == "infra_error"]
    eps = mean_collapse_error([r["class_counts"] for r in ok], n_boot=config.n_boot, seed=config.seed)
    ent = mean_with_state_se([r["entropy"] for r in ok], [r["entropy_ci95"] for r in ok], n_boot=config.n_boot,
                             seed=config.seed)  # fmt: skip
    exact = [r["exact"]["collapse_error"] for r in ok if (r.get("exact") or {}).get("collapse_error") is not None]
    summary: dict[str, Any] = {
        "collapse_error": {"estimate": eps["estimate"], "ci95": eps["ci95"], "method": eps.get("method")},
        "collapse_error_corrected": float(np.mean([r["collapse_error_corrected"] for r in ok])) if ok else None,
        "entropy": {"estimate": ent["estimate"], "ci95": ent["ci95"], "estimator": "chao_wang_jost", "unit": "nats"},
        "effective_modes": math.exp(ent["estimate"]) if ent["estimate"] is not None else None,
        "accumulated_collapse_error": None,
        "distinct_2": _mean([r.get("distinct_2") for r in ok]),
        "vendi": _mean([r.get("vendi") for r in ok]),
        "exact_collapse_error": float(np.mean(exact)) if exact else None,
        "n_exact_states": len(exact),
        "n_states": len(ok),
        "infra_failures": len(infra),
        "infra_errors": sorted({str(r.get("error")) for r in infra})[:5],
        "samples_per_state": config.samples,
        "low_confidence": config.samples < MIN_CONFIDENT_SAMPLES,
        "n_empty_responses": int(sum(r.get("n_empty", 0) for r in ok)),
    }
    vs = [r["vs"] for r in ok if "vs" in r]
    if vs:
        fails = sum(v["parse_failures"] for v in vs)
        total = sum(r["n"] for r in ok if "vs" in r)
        reasons: Counter[str] = Counter()
        for v in vs:
            reasons.update(v["failure_reasons"])
        summary["vs_parse_failures"] = {"count": fails, "of": total, "rate": fails / total if total else None,
                                        "reasons": dict(reasons)}  # fmt: skip
    by_source: dict[str, Any] = {}
    for src in sorted({r["source"] for r in ok}):
        rs = [r for r in ok if r["source"] == src]
        e = mean_collapse_error([r["class_counts"] for r in rs], n_boot=config.n_boot, seed=config.seed)
        by_source[src] = {"collapse_error": e["estimate"], "ci95": e["ci95"], "n_states": len(rs),
                          "entropy": float(np.mean([r["entropy"] for r in rs]))}  # fmt: skip
    summary["by_source"] = by_source
    return summary


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def paired_difference(
    a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]], n_boot: int, seed: int
) -> dict[str, Any]:
    """Mean ε̂(b) − ε̂(a) over the states measured in both modes, with a two-level paired bootstrap
    (the same resampled states in both modes; responses resampled within each)."""
    ka = {r["state_id"]: r for r in a if r.get("status") == "ok"}
    kb = {r["state_id"]: r for r in b if r.get("status") == "ok"}
    common = [s for s in ka if s in kb]
    if not common:
        return {"estimate": None, "ci95": None, "n_states": 0}
    rng = np.random.default_rng(seed)
    ca = [np.asarray(ka[s]["class_counts"]) for s in common]
    cb = [np.asarray(kb[s]["class_counts"]) for s in common]
    diff = np.array([(1 - y.max() / y.sum()) - (1 - x.max() / x.sum()) for x, y in zip(ca, cb, strict=True)])
    ma, mb = _eps_boot_matrix(ca, n_boot, rng), _eps_boot_matrix(cb, n_boot, rng)
    idx = (
        rng.integers(0, len(common), size=(n_boot, len(common)))
        if len(common) > 1
        else np.zeros((n_boot, 1), dtype=int)
    )
    cols = np.arange(n_boot)[:, None]
    boot = (mb[idx, cols] - ma[idx, cols]).mean(axis=1)
    est = float(diff.mean())
    lo, hi = _boot_ci(boot, est, 0.95, basic=True)
    return {"estimate": est, "ci95": [lo, hi], "n_states": len(common)}


def verdict(summary: dict[str, Any], config: AuditConfig) -> str:
    """One line: COLLAPSED when the CI of the mean ε̂ lies below ε*, NOT COLLAPSED when it lies
    above, INCONCLUSIVE when it straddles ε*; LOW CONFIDENCE is appended for N < 20."""
    ce = summary["collapse_error"]
    if ce["estimate"] is None:
        return f"NO RESULT: no state could be measured ({summary['infra_failures']} infrastructure failures)"
    est, (lo, hi) = ce["estimate"], ce["ci95"]
    star = config.epsilon_star
    where = f"over {summary['n_states']} states, N = {config.samples}, partition = {config.partitioner_name}"
    if hi < star:
        line = f"COLLAPSED: mean ε̂ = {est:.3f} [{lo:.3f}, {hi:.3f}] < ε* = {star:g} ({where}): the simulator answers with its mode"
    elif lo > star:
        line = f"NOT COLLAPSED: mean ε̂ = {est:.3f} [{lo:.3f}, {hi:.3f}] > ε* = {star:g} ({where})"
    else:
        line = f"INCONCLUSIVE: mean ε̂ = {est:.3f} [{lo:.3f}, {hi:.3f}] contains ε* = {star:g} ({where}); sample more states or responses"
    if summary.get("low_confidence"):
        line += f" [LOW CONFIDENCE: N = {config.samples} < 20 responses per state; ε̂ is biased towards collapsed]"
    if summary["infra_failures"]:
        line += f" [{summary['infra_failures']} states excluded: infrastructure failures]"
    return line


# ----------------------------------------------------------------------------------------------- trajectory


def trajectory_summary(records: Sequence[dict[str, Any]], config: AuditConfig) -> dict[str, Any] | None:
    """ε per turn, accumulated ε̄_H over the on-policy rollouts, and the gradient-bias bound."""
    from collapse_probe.metrics.trajectory import accumulated_collapse_error, gradient_bias_bound, tv_bound

    ok = [r for r in records if r.get("status") == "ok" and r["source"] == "on_policy"]
    if not ok:
        return None
    per_conv: dict[str, list[float]] = {}
    by_turn: dict[int, list[float]] = {}
    for r in sorted(ok, key=lambda r: (r["conversation"], r["turn"])):
        per_conv.setdefault(r["conversation"], []).append(r["collapse_error"])
        by_turn.setdefault(r["turn"], []).append(r["collapse_error"])
    eps_bar = accumulated_collapse_error(list(per_conv.values()))
    return {
        "collapse_error_by_turn": [
            {"turn": t, "mean": float(np.mean(v)), "n_states": len(v)} for t, v in sorted(by_turn.items())
        ],
        "accumulated_collapse_error": eps_bar,
        "tv_bound": tv_bound(eps_bar),
        "gradient_bias_bound": gradient_bias_bound(eps_bar, config.bound_b, config.r_max),
        "B": config.bound_b,
        "R_max": config.r_max,
        "n_rollouts": len(per_conv),
    }


class _SeedOverride:
    """The policy with its own randomness fixed: turn t samples with ``derive_seed(agent_seed, t)``
    whatever the conversation seed, so resampled conversations differ only by the simulator's draws."""

    def __init__(self, inner: Any, agent_seed: int) -> None:
        self.inner, self.agent_seed, self.spec = inner, agent_seed, inner.spec

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[Any]:
        from dataclasses import replace

        fixed = []
        for r in requests:
            turn = sum(1 for m in r.messages if m.get("role") == "assistant")
            fixed.append(replace(r, params=replace(r.params, seed=derive_seed(self.agent_seed, turn))))
        return await self.inner.generate(fixed)


async def variance_share(arena: Arena, tasks: Sequence[Task], policy: Participant, sim: Participant,
                         config: AuditConfig, run_dir: RunDir | None, progress: bool,
                         eps_bar: float | None = None) -> dict[str, Any]:  # fmt: skip
    """Simulator-side share of reward variance (Lemma 3.3) by nested resampling.

    For every task and each of ``variance_agents`` agent seeds, the policy's random numbers are
    fixed (:class:`_SeedOverride`) and ``variance_sims`` conversations are run with different
    simulator seeds; the rewards of one (task, agent seed) form one inner group.
    """
    from collapse_probe.metrics.trajectory import reward_variance_bound, simulator_variance_share

    participants: dict[str, Participant] = {sim.label: sim}
    specs = []
    for g in range(config.variance_agents):
        label = f"{policy.label}#agent{g}"
        participants[label] = Participant(label, _SeedOverride(policy.model, derive_seed(config.seed, 7919 + g)),
                                          policy.mode, policy.vs_k)  # fmt: skip
        specs += make_specs(tasks, [label], [sim.label], config.variance_sims, config.seed + 1 + g)
    sub = RunDir(run_dir.path / "variance") if run_dir is not None else None
    records = await run_conversations(arena, specs, participants, run_dir=sub,
                                      config=EngineConfig(temperature=config.temperature, progress=progress))  # fmt: skip
    groups: dict[tuple[str, str], list[float]] = {}
    infra = 0
    for rec in records:
        if rec.get("status") == "infra_error" or rec.get("reward") is None:
            infra += 1
            continue
        groups.setdefault((rec["policy"], rec["task_id"]), []).append(float(rec["reward"]))
    groups = {k: v for k, v in groups.items() if len(v) >= 2}
    if not groups:
        return {"share": None, "note": "no agent prefix had 2 scored continuations", "infra_failures": infra}
    vs = simulator_variance_share(list(groups.values()), seed=config.seed, estimator="anova")
    out = vs.to_dict()
    out.update(infra_failures=infra, agents=config.variance_agents, sims=config.variance_sims,
               n_conversations=len(records))  # fmt: skip
    if eps_bar is not None:
        # Lemma 3.3 with ε_H estimated by the accumulated collapse error of the audited rollouts.
        out["reward_variance_bound"] = reward_variance_bound(eps_bar, config.r_max)
        out["within_le_bound"] = bool(vs.within <= out["reward_variance_bound"])
    return out


# ----------------------------------------------------------------------------------------------- human reference


def donation_comparison(simulated: Sequence[float], human: Sequence[float]) -> dict[str, Any]:
    """Simulated vs human donation distributions: Wasserstein-1, two-sample KS, and L1 over the
    bins :data:`DONATION_BINS` (Σ|p − q|, in [0, 2])."""
    from scipy.stats import ks_2samp, wasserstein_distance

    s = np.clip(np.asarray(simulated, dtype=np.float64), 0, 2)
    h = np.clip(np.asarray(human, dtype=np.float64), 0, 2)
    if s.size == 0 or h.size == 0:
        return {
            "note": "no simulated or no human donations to compare",
            "n_simulated": int(s.size),
            "n_human": int(h.size),
        }
    edges = np.array(DONATION_BINS)
    ps = np.histogram(s, bins=edges)[0] / s.size
    ph = np.histogram(h, bins=edges)[0] / h.size
    ks = ks_2samp(s, h)
    return {
        "wasserstein": float(wasserstein_distance(s, h)),
        "ks_statistic": float(ks.statistic),
        "ks_pvalue": float(ks.pvalue),
        "l1_binned": float(np.abs(ps - ph).sum()),
        "bins": ["$0", "($0, $0.5]", "($0.5, $1]", "($1, $1.5]", "($1.5, $2]"],
        "simulated_binned": ps.tolist(),
        "human_binned": ph.tolist(),
        "simulated_mean": float(s.mean()),
        "human_mean": float(h.mean()),
        "n_simulated": int(s.size),
        "n_human": int(h.size),
    }


def human_reference(
    records: Sequence[dict[str, Any]], dialogues: Sequence[Any], embedder: Any = None
) -> dict[str, Any]:
    """Compare the audited simulator with the human P4G data."""
    from collapse_probe.benchmarks.p4g import parse_donation
    from collapse_probe.metrics.vendi import distinct_n, vendi_score

    ok = [r for r in records if r.get("status") == "ok"]
    sim_donations, stated, total = [], 0, 0
    for r in ok:
        if r["source"] in ("elicitation",) or r.get("closed_set"):
            for t in r["responses"]:
                total += 1
                d = parse_donation(t)
                if d is not None:
                    stated += 1
                    sim_donations.append(min(d, 2.0))
    human_donations = [d.donation for d in dialogues if d.donation is not None]
    out: dict[str, Any] = {"donations": donation_comparison(sim_donations, human_donations)}
    out["donations"]["simulated_stated_fraction"] = stated / total if total else None
    hs = [r for r in ok if r["source"] == "human" and r.get("human_reply")]
    if hs:
        human_texts = [r["human_reply"] for r in hs]
        sim_texts = [r["responses"][0] for r in hs]  # one draw per prefix: like with like
        div: dict[str, Any] = {"n_prefixes": len(hs)}
        for n in (1, 2):
            div[f"distinct_{n}"] = {"simulator": distinct_n(sim_texts, n), "human": distinct_n(human_texts, n)}
        if embedder is not None and len(hs) >= 2:
            emb = embedder.embed(sim_texts + human_texts)
            div["vendi"] = {"simulator": vendi_score(emb[: len(hs)]), "human": vendi_score(emb[len(hs) :])}
        out["diversity"] = div
    return out


# ----------------------------------------------------------------------------------------------- pipeline


def _make_partitioner(config: AuditConfig) -> Any:
    from collapse_probe.metrics.partitioners import get_partitioner

    name = config.partitioner_name
    if name == "judge":
        from collapse_probe.models import get_model
        from collapse_probe.simulators import parse_participant_spec

        return get_partitioner("judge", model=get_model(config.judge or parse_participant_spec(config.sim)[1]))
    if name == "label" and config.benchmark != "p4g":
        raise ConfigError(
            f"--partition label: the shipped labeller is for p4g; for {config.benchmark} use exact, embedding or judge"
        )
    return get_partitioner(name)


def _sim_participants(config: AuditConfig, cache: bool) -> list[Participant]:
    from collapse_probe.simulators import make_participant, parse_participant_spec

    mode, model_spec = parse_participant_spec(config.sim)
    primary = make_participant(config.sim, vs_k=config.vs_k, cache=cache)
    if not config.compare_vs:
        return [primary]
    other_spec = f"direct:{model_spec}" if mode == "verbalized" else f"vs:{model_spec}"
    other = make_participant(other_spec, vs_k=config.vs_k, cache=cache)
    return [primary, other]


async def run_audit_async(
    config: AuditConfig,
    out: str | Path | None,
    *,
    arena: Arena | None = None,
    cache: bool = True,
    progress: bool = True,
    participants: list[Participant] | None = None,
    policy: Participant | None = None,
) -> dict[str, Any]:
    """Run the audit and return ``results.json``'s dictionary (also written to ``out``).

    Args:
        config: the audit configuration.
        out: run directory (``None``: nothing is written, e.g. in notebooks).
        arena: the benchmark (default: built from ``config``).
        cache: serve and store samples through the response cache.
        progress: show progress bars.
        participants: simulator participants to audit (default: built from ``config.sim``).
        policy: the policy participant (default: built from ``config.policy``).
    """
    config.validate()
    if arena is None:
        from collapse_probe.benchmarks import make_arena

        if config.benchmark == "p4g":
            from collapse_probe.benchmarks.p4g import load_personas

            personas = load_personas(config.personas) if config.personas else None
            arena = make_arena("p4g", personas=personas, max_turns=config.max_turns)
        else:
            arena = make_arena(config.benchmark, max_turns=config.max_turns)
    run_dir = None
    done: dict[tuple[str, str], dict[str, Any]] = {}
    if out is not None:
        run_dir = RunDir(out)
        run_dir.create({**asdict(config), "version": __version__}, kind="audit")
        run_dir.repair(SAMPLES)
        for rec in run_dir.read_jsonl(SAMPLES):
            done[(rec["state_id"], rec["mode"])] = rec  # the last record of a state wins
    sims = participants or _sim_participants(config, cache)
    if config.policy is not None and policy is None:
        from collapse_probe.simulators import make_participant

        policy = make_participant(config.policy, vs_k=config.vs_k, cache=cache)
    partitioner = _make_partitioner(config)
    embedder = None
    if config.vendi or config.partitioner_name == "embedding":
        from collapse_probe.metrics.partitioners import EmbeddingPartitioner

        embedder = partitioner if config.partitioner_name == "embedding" else EmbeddingPartitioner()

    tasks = arena.load_tasks(config.states, seed=config.seed)
    states: list[ProbeState] = []
    conv_records: list[dict[str, Any]] = []
    if policy is not None:
        specs = make_specs(tasks, [policy.label], [sims[0].label], config.rollouts, config.seed)
        conv_records = await run_conversations(
            arena, specs, {policy.label: policy, sims[0].label: sims[0]}, run_dir=run_dir,
            config=EngineConfig(temperature=config.temperature, top_p=config.top_p, progress=progress),
        )  # fmt: skip
        states += on_policy_states(arena, conv_records, {t.task_id: t for t in tasks})
    else:
        states += p4g_probe_states(arena, tasks)
    dialogues: list[Any] = []
    if config.human is not None:
        from collapse_probe.benchmarks.p4g import load_official_p4g

        _, dialogues = load_official_p4g(config.human)
        # human dialogues are P4G, where max_turns is always set (3 unless given)
        states += human_probe_states(arena, dialogues, config.states, config.max_turns or 3, config.seed)
    if not states:
        raise ConfigError(
            "no states to audit: every rollout was an infrastructure failure" if policy else "no states to audit"
        )

    bar = None
    total = len(states) * len(sims)
    if progress:
        from tqdm.auto import tqdm

        initial = sum(1 for s in states for p in sims if (s.state_id, p.mode) in done)
        bar = tqdm(total=total, initial=initial, desc=f"audit {config.sim}", unit="state")
    try:
        by_mode: dict[str, list[dict[str, Any]]] = {}
        for p in sims:
            sampler = _Sampler(arena, p, partitioner, config, run_dir, done, embedder=embedder, bar=bar)
            by_mode[p.mode] = await sampler.run(states)
    finally:
        if bar is not None:
            bar.close()

    primary = sims[0]
    recs = by_mode[primary.mode]
    summary = summarize_states(recs, config)
    traj = trajectory_summary(recs, config)
    if traj is not None:
        summary["accumulated_collapse_error"] = traj["accumulated_collapse_error"]
    results: dict[str, Any] = {
        "schema": SCHEMA,
        "version": __version__,
        "simulator": config.sim,
        "mode": primary.mode,
        "benchmark": config.benchmark,
        "policy": config.policy,
        "partitioner": config.partitioner_name,
        "samples_per_state": config.samples,
        "epsilon_star": config.epsilon_star,
        "config": asdict(config),
        "summary": summary,
        "verdict": verdict(summary, config),
        "trajectory": traj,
        "states": [_state_row(r) for r in recs],
    }
    if config.compare_vs:
        other = sims[1]
        other_summary = summarize_states(by_mode[other.mode], config)
        direct = recs if primary.mode == "direct" else by_mode[other.mode]
        vsr = by_mode[other.mode] if primary.mode == "direct" else recs
        results["compare_vs"] = {
            "direct": summary if primary.mode == "direct" else other_summary,
            "verbalized": other_summary if primary.mode == "direct" else summary,
            "difference_vs_minus_direct": paired_difference(direct, vsr, config.n_boot, config.seed),
            "vs_parse_failures": (other_summary if primary.mode == "direct" else summary).get("vs_parse_failures"),
            "states": [_state_row(r) for r in by_mode[other.mode]],
        }
    if config.variance_share and policy is not None:
        results["variance_share"] = await variance_share(arena, tasks, policy, primary, config, run_dir, progress,
                                                         eps_bar=summary["accumulated_collapse_error"])  # fmt: skip
    elif config.variance_share:
        results["variance_share"] = {"share": None, "note": "--variance-share needs --policy (agent prefixes to fix)"}
    if dialogues:
        results["human_reference"] = human_reference(recs, dialogues, embedder)
    if conv_records:
        from collapse_probe.play import summarize_rewards

        results["rollouts"] = summarize_rewards(conv_records)
    if run_dir is not None:
        run_dir.write_results(results)
        write_audit_report(run_dir.path / "report.html", results, recs)
    return results


def _state_row(r: dict[str, Any]) -> dict[str, Any]:
    """The per-state entry of ``results.json`` (responses stay in ``samples.jsonl``)."""
    keys = ("state_id", "mode", "source", "turn", "task_id", "status", "n", "class_counts", "class_names",
            "collapse_error", "collapse_error_ci95", "collapse_error_corrected", "entropy", "entropy_ci95",
            "hill", "distinct_1", "distinct_2", "vendi", "low_confidence", "exact", "vs", "n_empty", "error")  # fmt: skip
    row = {k: r[k] for k in keys if k in r}
    row.setdefault("n", 0)
    row.setdefault("class_counts", [])
    row.setdefault("collapse_error", None)
    row.setdefault("collapse_error_ci95", None)
    row.setdefault("entropy", None)
    if "vs" in row:
        row["vs"] = {k: v for k, v in row["vs"].items() if k != "examples"}
    return row


def write_audit_report(path: str | Path, results: dict[str, Any], records: Sequence[dict[str, Any]]) -> Path:
    """``report.html``: ε per state with CIs, class histograms with examples, ε by turn, direct vs VS."""
    from collapse_probe.report import write_html_report
    from collapse_probe.report.audit_plots import audit_sections

    return write_html_report(path, f"Collapse audit: {results['simulator']} on {results['benchmark']}",
                             audit_sections(results, records), subtitle=results["verdict"])  # fmt: skip


def run_audit(config: AuditConfig, out: str | Path | None, **kwargs: Any) -> dict[str, Any]:
    """:func:`run_audit_async` for callers without an event loop."""
    return asyncio.run(run_audit_async(config, out, **kwargs))


def summary_table(results: dict[str, Any]) -> str:
    """A plain-text table for the terminal."""
    s = results["summary"]
    ce, en = s["collapse_error"], s["entropy"]

    def f(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    def ci(c: Sequence[float] | None) -> str:
        return "" if not c else f"[{c[0]:.3f}, {c[1]:.3f}]"

    rows = [
        ("simulator", f"{results['simulator']} ({results['mode']})"),
        ("states measured", f"{s['n_states']} (infra failures excluded: {s['infra_failures']})"),
        (
            "samples per state",
            f"{results['samples_per_state']}" + ("  LOW CONFIDENCE (N < 20)" if s["low_confidence"] else ""),
        ),
        ("partitioner", results["partitioner"]),
        ("collapse error ε̂ (mean)", f"{f(ce['estimate'])} {ci(ce['ci95'])}"),
        ("ε corrected (mean)", f(s["collapse_error_corrected"])),
        ("entropy, nats (CWJ)", f"{f(en['estimate'])} {ci(en['ci95'])}"),
        ("effective modes exp(H)", f(s["effective_modes"])),
        ("exact ε (closed set)", f"{f(s['exact_collapse_error'])} over {s['n_exact_states']} states"),
        ("accumulated ε̄_H", f(s["accumulated_collapse_error"])),
    ]
    for src, b in s.get("by_source", {}).items():
        rows.append((f"  ε̂ at {src} states", f"{f(b['collapse_error'])} {ci(b['ci95'])} (n={b['n_states']})"))
    if results.get("trajectory"):
        t = results["trajectory"]
        rows.append(
            (
                "gradient-bias bound",
                f"2·B·R_max·ε̄_H = {t['gradient_bias_bound']:.3f} (B={t['B']:g}, R_max={t['R_max']:g})",
            )
        )
    if "vs_parse_failures" in s:
        v = s["vs_parse_failures"]
        rows.append(("VS parse failures", f"{v['count']} of {v['of']}"))
    if "compare_vs" in results:
        c = results["compare_vs"]
        d = c["difference_vs_minus_direct"]
        rows.append(("direct ε̂", f(c["direct"]["collapse_error"]["estimate"])))
        rows.append(("VS ε̂", f(c["verbalized"]["collapse_error"]["estimate"])))
        rows.append(("VS − direct", f"{f(d['estimate'])} {ci(d['ci95'])}"))
        if c.get("vs_parse_failures"):
            v = c["vs_parse_failures"]
            rows.append(("VS parse failures", f"{v['count']} of {v['of']} ({v['reasons']})"))
    if results.get("variance_share"):
        v = results["variance_share"]
        rows.append(
            ("simulator variance share", f"{f(v.get('share'))} {ci(v.get('ci'))} {v.get('note') or ''}".strip())
        )
    if results.get("human_reference"):
        d = results["human_reference"]["donations"]
        if "wasserstein" in d:
            rows.append(
                (
                    "donations vs human",
                    f"W1 {d['wasserstein']:.3f}, KS {d['ks_statistic']:.3f}, L1 {d['l1_binned']:.3f}",
                )
            )
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


__all__ = [
    "AuditConfig",
    "ProbeState",
    "donation_comparison",
    "exact_donation_distribution",
    "human_probe_states",
    "human_reference",
    "mean_collapse_error",
    "on_policy_states",
    "p4g_probe_states",
    "paired_difference",
    "run_audit",
    "run_audit_async",
    "summarize_states",
    "summary_table",
    "trajectory_summary",
    "variance_share",
    "verdict",
]
