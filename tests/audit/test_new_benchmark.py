"""A benchmark defined here, registered with one line, audited like P4G through the arena hooks."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from collapse_probe.benchmarks import (
    BENCHMARKS,
    Benchmark,
    Episode,
    ProbeSpec,
    Score,
    Task,
    TurnPrompt,
    register_benchmark,
)
from collapse_probe.pipelines.audit import AuditConfig, run_audit

ASK = "Would you recommend us to a friend? Answer [YES] or [NO]."


@dataclass
class HotelSurveyArena:
    """A guest (the simulator) answers a hotel's follow-up call; the reward is 1 for a recommendation."""

    max_turns: int | None = None
    name: str = "hotel-survey"

    def load_tasks(self, n=None, split=None, seed=0):
        return [Task(f"guest-{i}", {"room": 100 + i}, split) for i in range(n or 3)]

    def new_episode(self, task, seed):
        return Episode(task=task, seed=seed)

    def next_side(self, episode):
        if episode.messages and episode.messages[-1]["role"] == "simulator":
            episode.done, episode.status = True, "done"
            return None
        return "policy" if not episode.messages else "simulator"

    def prompt_for(self, episode, side):
        lines = [f"{'Hotel' if m['role'] == 'policy' else 'Guest'}: {m['content']}" for m in episode.messages]
        return TurnPrompt(messages=[{"role": "user", "content": m["content"]} for m in episode.messages],
                          prompt="\n".join([*lines, "Guest:"]), stop=("\n",), max_tokens=32)  # fmt: skip

    def apply(self, episode, side, completion, text):
        episode.messages.append({"role": side, "content": text.strip()})

    async def score(self, episodes):
        return [Score(1.0 if "[YES]" in (e.messages[-1]["content"] if e.messages else "") else 0.0) for e in episodes]

    # audit hooks
    fallback_partition = "label"

    def probe_states(self, tasks):
        out = []
        for t in tasks:
            hello = [{"role": "policy", "content": "Hello, this is the hotel. How was your stay?"}]
            out.append(ProbeSpec(t, "opening", hello))
            out.append(ProbeSpec(t, "elicitation", [*hello, {"role": "policy", "content": ASK}], asks_decision=True))
        return out

    def decision_label(self, text):
        return "yes" if "[YES]" in text else "no" if "[NO]" in text else "undecided"

    def closed_answers(self):
        return [("[YES]", "yes"), ("[NO]", "no")]


@pytest.fixture
def hotel_survey():
    # the one registration: a Benchmark whose build takes the run's parsed options (turn cap, ...)
    register_benchmark("hotel-survey", Benchmark("hotel-survey", build=lambda o, _: HotelSurveyArena(o.max_turns)))
    yield
    BENCHMARKS.unregister("hotel-survey")


def test_a_new_benchmark_is_audited_through_its_hooks(hotel_survey, write_scripted):
    sim = write_scripted([("[YES] Lovely stay.", 0.5), ("[YES]", 0.2), ("[NO] The room was noisy.", 0.3)])
    res = run_audit(AuditConfig(sim=sim, benchmark="hotel-survey", states=2, samples=200, partition="exact"), None,
                    progress=False, cache=False)  # fmt: skip
    s = res["summary"]
    assert res["benchmark"] == "hotel-survey" and s["n_states"] == 4 and s["infra_failures"] == 0
    assert set(s["by_kind"]) == {"opening", "elicitation"}
    # exact text: 3 replies, ε = 0.5; the decision view (yes 0.7 / no 0.3) only where a decision is asked
    assert s["collapse_error"]["estimate"] == pytest.approx(0.5, abs=0.08)
    assert s["decision_collapse_error"]["n_states"] == 2
    assert s["decision_collapse_error"]["estimate"] == pytest.approx(0.3, abs=0.08)
    # without a reward_class hook the reward view is the decision label, where a decision is asked
    assert s["reward_view"]["n_states"] == 2 and "decision label" in s["reward_view"]["classes"]
    assert s["reward_view"]["estimate"] == s["decision_collapse_error"]["estimate"]
    assert res["verdicts"]["reward"]["label"] == "NOT COLLAPSED"
    # the closed answer set [YES] / [NO] scored exactly, the rest of the mass shown outside it
    elic = [st for st in res["states"] if st["kind"] == "elicitation"]
    assert all(st["exact"]["outside_mass"] == pytest.approx(0.8) for st in elic)
    assert all(st["exact"]["distribution"]["yes"] == pytest.approx(0.2) for st in elic)
    # the benchmark's decision label as the partition
    lab = run_audit(AuditConfig(sim=sim, benchmark="hotel-survey", states=1, samples=200, partition="label"), None,
                    progress=False, cache=False)  # fmt: skip
    assert lab["summary"]["collapse_error"]["estimate"] == pytest.approx(0.3, abs=0.08)


def test_a_benchmark_without_probe_states_needs_a_policy(write_scripted):
    @dataclass
    class Bare(HotelSurveyArena):
        probe_states = None  # type: ignore[assignment]

    register_benchmark("bare-survey", Benchmark("bare-survey", build=lambda _o, _c: Bare()))
    try:
        with pytest.raises(Exception, match="offers no probe states; give --policy"):
            run_audit(AuditConfig(sim=write_scripted([("[YES]", 1.0)]), benchmark="bare-survey", partition="exact"),
                      None, progress=False, cache=False)  # fmt: skip
    finally:
        BENCHMARKS.unregister("bare-survey")
