"""Reports: ``play`` writes report.html; empty or undefined charts say why; whole-step axes; short tick labels."""

from __future__ import annotations

from pathlib import Path

from collapse_probe.core._records import ConversationRecord
from collapse_probe.pipelines.play import PlayConfig, run_play
from collapse_probe.report._html import TICK_FORMAT
from collapse_probe.report.crossplay_plots import strategy_entropy_bars, transfer_bars
from collapse_probe.report.play_plots import reward_by_task_figure
from collapse_probe.report.training_plots import reward_curves_figure, training_figures
from collapse_probe.rollout.runspec import ArenaSpec
from collapse_probe.simulators import make_participant

DONOR = Path(__file__).resolve().parents[2] / "collapse_probe" / "data" / "scripted" / "p4g_donor_diverse.json"


def _notes(fig) -> str:
    """The figure's notes as one line (a note is wrapped to the figure's width by ``<br>``)."""
    return " ".join(a.text.replace("<br>", " ") for a in fig.layout.annotations)


def test_play_writes_a_report(tmp_path) -> None:
    spec = f"scripted:{DONOR}"
    config = PlayConfig(policy=spec, sim=spec, tasks=2, rollouts=2)
    run_play(config, ArenaSpec().build([spec]), {spec: make_participant(spec, cache=False)}, tmp_path, progress=False)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "collapse-probe play" in page and "Mean reward per task" in page and "SIMULATOR:" in page
    assert page.count("plotly.js v") <= 1  # plotly inlined once, works offline


def test_undefined_and_empty_charts_say_why() -> None:
    undefined = {
        "train_simulator": "smollm2",
        "transfer": [{"policy": "p", "transfer_ratio": None, "note": "train reward is 0", "ci95": None}],
    }
    assert "undefined transfer ratio" in _notes(transfer_bars(undefined)) and "train reward is 0" in _notes(
        transfer_bars(undefined)
    )
    assert "--train-sim" in _notes(transfer_bars({"train_simulator": None, "transfer": []}))
    assert "no policy messages" in _notes(strategy_entropy_bars({"policy_diversity": []}))
    failed = [
        ConversationRecord.make(policy="p", simulator="s", task_id="t", status="infra_error", infra_error="timeout")
    ]
    assert "infrastructure failure" in _notes(reward_by_task_figure(failed))
    assert "no data yet" in _notes(reward_curves_figure({"run": [{"step": 1}]}))
    # a chart with data has no note
    ok = {"train_simulator": "s", "transfer": [{"policy": "p", "transfer_ratio": 0.8, "ci95": [0.7, 0.9]}]}
    assert _notes(transfer_bars(ok)) == ""


def test_training_axes_are_whole_steps_with_short_tick_labels() -> None:
    curves = {"run": [{"step": s, "train_reward": 0.05 * s, "heldout_reward": 0.1} for s in range(1, 4)]}
    figures = [fig for _, fig in training_figures(curves) if not isinstance(fig, str)]  # no zero-std share: a sentence
    assert len(figures) == 3
    for fig in figures:
        assert fig.layout.xaxis.tickformat == "d" and fig.layout.xaxis.dtick == 1 and fig.layout.xaxis.tick0 == 0
        assert fig.layout.yaxis.tickformat == TICK_FORMAT
    long = {"run": [{"step": s, "train_reward": 0.5} for s in range(0, 201)]}
    assert reward_curves_figure(long).layout.xaxis.dtick == 20


def test_runs_of_very_different_length_overlay_on_progress() -> None:
    """A 2-step run beside a 300-step run: on one step axis the short run is a dot at the left, so
    ``auto`` draws each against the share of its own steps; ``step`` keeps the step axis exactly."""
    short = [{"step": s, "train_reward": 0.2 + 0.3 * s} for s in (1, 2)]
    long = [{"step": s, "train_reward": s / 300} for s in range(1, 301)]
    curves = {"llm": short, "lab": long}
    alarms = [{"step": 2, "kind": "collapse", "message": "eps fell", "run": "llm"},
              {"step": 150, "kind": "collapse", "message": "eps fell", "run": "lab"}]  # fmt: skip
    figs = dict(training_figures(curves, alarms))
    reward = figs["Train vs held-out reward"]
    xs = {t.name.split(" — ")[0]: list(t.x) for t in reward.data}
    assert xs["llm"] == [0.5, 1.0] and xs["lab"][-1] == 1.0 and xs["lab"][149] == 0.5
    assert reward.layout.xaxis.tickformat == ".0%"
    marks = next(t for t in reward.data if t.name == "monitor alarm")
    assert sorted(marks.x) == [0.5, 1.0] and any("step 150" in c for c in marks.customdata)
    by_step = dict(training_figures(curves, alarms, x="step"))["Train vs held-out reward"]
    assert [list(t.x) for t in by_step.data[:2]] == [[1, 2], list(range(1, 301))]
    assert by_step.layout.xaxis.tickformat == "d"
    # runs of similar length keep the step axis under auto
    similar = {"a": long, "b": long[:100]}
    assert dict(training_figures(similar))["Policy entropy"].layout.xaxis.tickformat == "d"


def test_people_beside_the_simulator_with_their_intervals() -> None:
    from collapse_probe.benchmarks.p4g import HumanDialogue
    from collapse_probe.benchmarks.p4g.stance import StanceReader
    from collapse_probe.pipelines.audit._human import people_epsilon
    from collapse_probe.report.audit_plots import people_vs_simulator_figure

    ask, replies = ["proposition-of-donation"], [["agree-donation"], ["disagree-donation"], ["ask-org-info"]]
    annotated = [
        HumanDialogue(f"d{i}", [("policy", "Hi"), ("simulator", "Hey"), ("policy", "Donate?"), ("simulator", "...")],
                      acts=[["greeting"], ["greeting"], ask, r])
        for i, r in enumerate(replies)
    ]  # fmt: skip
    recs = [{"state_id": f"human:d{i}:3", "status": "ok", "source": "human", "responses": ["Sure, I'll donate $1."] * 10}
            for i in range(2)]  # fmt: skip
    pe = people_epsilon(recs, annotated, StanceReader("rules"))
    assert pe is not None
    fig = people_vs_simulator_figure({"human_reference": {"people_epsilon": pe}})
    people, sim = fig.data
    (g,) = pe["groups"]
    assert list(people.y) == [pe["people"]["estimate"], g["people"]["collapse_error"]]
    assert list(sim.y) == [pe["simulator_pooled"]["estimate"], g["simulator_pooled"]["collapse_error"]]
    assert sim.y[1] == 0 < people.y[1]  # one stance from the simulator, three from the people
    lo, hi = g["people"]["ci95"]
    assert abs(people.y[1] - people.error_y.arrayminus[1] - lo) < 1e-12
    assert abs(people.y[1] + people.error_y.array[1] - hi) < 1e-12
    assert people_vs_simulator_figure({"human_reference": {}}) is None
