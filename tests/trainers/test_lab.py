"""The collapse lab: exact analysis against hand computations and brute force, and the paper's claims."""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
from dataclasses import replace

import numpy as np
import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.trainers._lab_world import (
    SCORE_NORM_BOUND,
    LabWorld,
    TabularSimulator,
    analyse,
    expected_reward,
    make_world,
    modal_distribution,
    softmax,
    trajectory_rewards,
)
from collapse_probe.trainers.lab import METHODS, SCHEMA, LabConfig, run_lab

SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def runs() -> dict[tuple[str, int], object]:
    """Default-config runs of the methods the claims are about, for three seeds (cached per module)."""
    return {
        (m, s): run_lab(LabConfig(method=m, seed=s)) for m in ("single", "vs", "ensemble", "population") for s in SEEDS
    }


def _tiny_world(reward: np.ndarray, horizon: int) -> LabWorld:
    x, s, b = reward.shape
    return LabWorld(
        reward=reward,
        reference=np.full((x, b), 1.0 / b),
        strategy_kind=("exploit",) * s,
        exploited_behaviour=np.zeros(s, dtype=int),
        horizon=horizon,
    )


# ---------------------------------------------------------------- exact analysis vs hand computation


def test_product_simulator_by_hand():
    # one task, one strategy, B=2, H=2, phi = (0.9, 0.1) at every turn; r(u=0)=1, r(u=1)=0
    world = _tiny_world(np.array([[[1.0, 0.0]]]), horizon=2)
    sim = TabularSimulator.from_task_distribution(np.array([[0.9, 0.1]]), 1, 2)
    a = analyse(world, sim, np.ones((1, 1)), trajectory_rewards(world))
    assert a.accumulated_collapse_error == pytest.approx(0.2)  # 2 turns x eps 0.1
    assert a.collapse_error == pytest.approx(0.1)
    assert a.tv == pytest.approx(1 - 0.81)  # TV to the point mass on (0, 0)
    assert a.mode_path_prob[0, 0] == pytest.approx(0.81)
    assert a.expected_reward == pytest.approx(0.9)
    assert a.expected_reward_mode == pytest.approx(1.0)


def test_persona_mixture_by_hand():
    # two personas (w = 1/2 each): phi_0 = (0.9, 0.1), phi_1 = (0.2, 0.8); the turn-2 law depends on turn 1
    world = _tiny_world(np.array([[[1.0, 0.0]]]), horizon=2)
    members = [TabularSimulator.from_task_distribution(np.array([p]), 1, 2) for p in ([0.9, 0.1], [0.2, 0.8])]
    sim = TabularSimulator.mixture(members)
    a = analyse(world, sim, np.ones((1, 1)), trajectory_rewards(world))
    # turn 1: marginal (0.55, 0.45) -> eps 0.45, mode 0
    # turn 2: joint (00, 01, 10, 11) = (0.425, 0.125, 0.125, 0.325) -> E[eps] = (0.55-0.425) + (0.45-0.325) = 0.25
    assert a.accumulated_collapse_error == pytest.approx(0.45 + 0.25)
    assert a.mode_path_prob[0, 0] == pytest.approx(0.425)
    assert a.tv == pytest.approx(0.575)
    assert a.tv <= a.accumulated_collapse_error


def _brute_force(world: LabWorld, sim: TabularSimulator, policy: np.ndarray) -> tuple[float, float, float]:
    """TV, eps_bar_H and J by looping over every (x, y, u_1..u_H) (no shared code with analyse)."""
    x_n, s_n, b, h = world.n_tasks, world.n_strategies, world.n_behaviours, world.horizon
    tv = acc = j = 0.0
    for x in range(x_n):
        for y in range(s_n):
            p_xy = policy[x, y] / x_n

            def prob(prefix: tuple[int, ...], x: int = x, y: int = y) -> float:
                return sum(
                    sim.weights[x, c] * math.prod(sim.probs[c, x, y, t, u] for t, u in enumerate(prefix))
                    for c in range(sim.weights.shape[1])
                )

            mode_path: tuple[int, ...] = ()
            for _ in range(h):
                mode_path += (max(range(b), key=lambda u, mp=mode_path: prob(mp + (u,))),)
            for seq in itertools.product(range(b), repeat=h):
                p = prob(seq)
                tv += 0.5 * p_xy * abs(p - (1.0 if seq == mode_path else 0.0))
                j += p_xy * p * np.mean([world.reward[x, y, u] for u in seq])
            for t in range(h):
                for prefix in itertools.product(range(b), repeat=t):
                    p_prefix = prob(prefix)
                    if p_prefix > 0:
                        acc += p_xy * p_prefix * (1 - max(prob(prefix + (u,)) for u in range(b)) / p_prefix)
    return tv, acc, j


def test_exact_analysis_matches_brute_force_enumeration():
    rng = np.random.default_rng(3)
    world = make_world(3, 5, 3, 3, rng)
    members = [TabularSimulator.from_table(softmax(2 * rng.normal(size=(3, 5, 3, 3)))) for _ in range(2)]
    sim = TabularSimulator.mixture(members, weights=rng.dirichlet([1, 1], size=3))
    policy = softmax(rng.normal(size=(3, 5)))
    a = analyse(world, sim, policy, trajectory_rewards(world))
    tv, acc, j = _brute_force(world, sim, policy)
    assert a.tv == pytest.approx(tv, rel=1e-10)
    assert a.accumulated_collapse_error == pytest.approx(acc, rel=1e-10)
    assert a.expected_reward == pytest.approx(j, rel=1e-10)
    np.testing.assert_allclose(a.tv_xy, 1 - a.mode_path_prob, atol=1e-12)
    # J depends on the simulator only through its per-turn marginals (mean-over-turns reward)
    marginals = np.einsum("xc,cxstb->xstb", sim.weights, sim.probs)
    assert a.expected_reward == pytest.approx(expected_reward(world, policy, marginals), rel=1e-10)


def test_exact_gradients_match_finite_differences():
    rng = np.random.default_rng(5)
    world = make_world(2, 5, 3, 2, rng)
    sim = TabularSimulator.from_table(softmax(rng.normal(size=(2, 5, 2, 3))))
    rewards_seq = trajectory_rewards(world)
    theta = rng.normal(size=(2, 5))
    a = analyse(world, sim, softmax(theta), rewards_seq)
    h = 1e-6
    fd_sim, fd_mode = np.zeros_like(theta), np.zeros_like(theta)
    for idx in np.ndindex(theta.shape):
        up, down = theta.copy(), theta.copy()
        up[idx] += h
        down[idx] -= h
        au, ad = analyse(world, sim, softmax(up), rewards_seq), analyse(world, sim, softmax(down), rewards_seq)
        fd_sim[idx] = (au.expected_reward - ad.expected_reward) / (2 * h)
        fd_mode[idx] = (au.expected_reward_mode - ad.expected_reward_mode) / (2 * h)
    np.testing.assert_allclose(a.grad_sim, fd_sim, atol=1e-8)
    np.testing.assert_allclose(a.grad_mode, fd_mode, atol=1e-8)


def test_score_norm_bound_of_softmax_table():
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(200):
        pi = softmax(rng.normal(scale=5, size=6))
        for y in range(6):
            worst = max(worst, float(np.linalg.norm(np.eye(6)[y] - pi)))
    assert worst <= SCORE_NORM_BOUND
    assert worst > 1.3  # the bound sqrt(2) is approached when pi is a point mass on another strategy


def test_simulator_sampling_matches_its_distribution():
    rng = np.random.default_rng(1)
    members = [TabularSimulator.from_task_distribution(np.array([p]), 1, 2) for p in ([0.9, 0.1], [0.2, 0.8])]
    sim = TabularSimulator.mixture(members)
    n = 40000
    u = sim.sample(np.zeros(n, dtype=int), np.zeros(n, dtype=int), rng)
    # persona drawn once per conversation: P(u1=1, u2=1) = 0.325, not 0.45**2
    assert np.mean((u[:, 0] == 1) & (u[:, 1] == 1)) == pytest.approx(0.325, abs=0.01)
    assert np.mean(u[:, 0] == 0) == pytest.approx(0.55, abs=0.01)


def test_modal_distribution():
    rho = np.array([[0.4, 0.3, 0.2, 0.1]])
    phi = modal_distribution(rho, np.array([0]), 0.95)
    np.testing.assert_allclose(phi, [[0.95, 0.05 * 0.5, 0.05 * 2 / 6, 0.05 / 6]])
    np.testing.assert_allclose(phi.sum(), 1.0)


# ---------------------------------------------------------------- config and results


@pytest.mark.parametrize(
    "field, value",
    [
        ("method", "rl"),
        ("n_strategies", 4),
        ("steps", 0),
        ("lr", -0.1),
        ("mode_concentration", 0.2),
        ("cotrain_reward", "hostile"),
        ("horizon", 9),
        ("ensemble_size", 5),
        ("vs_mixture", 1.5),
    ],
)
def test_config_validation_names_the_field(field, value):
    with pytest.raises(ConfigError, match=field):
        LabConfig(**{field: value})


@pytest.mark.parametrize("method", METHODS)
def test_every_method_runs_fast_and_satisfies_theorem_3_2(method):
    start = time.perf_counter()
    result = run_lab(LabConfig(method=method, seed=0))
    assert time.perf_counter() - start < 5.0
    data = json.loads(json.dumps(result.to_json()))  # strict JSON round trip
    assert data["schema"] == SCHEMA and data["method"] == method
    assert data["steps"][0] == 0 and data["steps"][-1] == 300
    for key in (
        "train_reward",
        "heldout_reward",
        "policy_entropy",
        "collapse_error",
        "tv",
        "tv_bound",
        "grad_gap",
        "grad_bound",
        "accumulated_collapse_error",
    ):
        assert len(data[key]) == len(data["steps"])
    # Theorem 3.2 at every logged step, checked here directly as well as by the flags
    assert data["bound_checks"] == {"tv_bound_holds": True, "grad_bound_holds": True}
    assert all(t <= b + 1e-12 for t, b in zip(result.tv, result.tv_bound, strict=True))
    assert all(g <= b + 1e-12 for g, b in zip(result.grad_gap, result.grad_bound, strict=True))
    # the policy actually trained
    assert result.policy_entropy[-1] < result.policy_entropy[0] - 0.5


def test_tv_bound_is_nearly_tight_for_the_collapsed_simulator(runs):
    result = runs[("single", 0)]
    # product of three 0.95-modal turns: TV = 1 - 0.95**3, eps_bar = 3 * 0.05
    assert result.tv[0] == pytest.approx(1 - 0.95**3)
    assert result.tv_bound[0] == pytest.approx(0.15)
    assert result.collapse_error[0] == pytest.approx(0.05)


def test_trainable_simulators_change():
    for method in ("cotrain", "population", "selfplay"):
        result = run_lab(LabConfig(method=method, steps=60))
        assert max(abs(c - result.collapse_error[0]) for c in result.collapse_error) > 1e-3, method
    frozen = run_lab(LabConfig(method="single", steps=60))
    assert max(frozen.collapse_error) - min(frozen.collapse_error) < 1e-12


# ---------------------------------------------------------------- the paper's claims, three seeds


@pytest.mark.parametrize("seed", SEEDS)
def test_single_collapses(runs, seed):
    r = runs[("single", seed)]
    train, held, ent = np.array(r.train_reward), np.array(r.heldout_reward), np.array(r.policy_entropy)
    assert train[-1] > train[0] + 0.4  # training reward rises...
    assert train[-1] >= train.max() - 0.02  # ...and ends near its best
    peak = int(held.argmax())
    assert 0 < peak < len(held) - 1
    assert held[peak] > held[0] + 0.05  # held-out first improves
    assert held[-1] < held[peak] - 0.02  # then falls by the end
    assert ent[-1] < 0.25 * ent[0]  # policy entropy collapse


@pytest.mark.parametrize("seed", SEEDS)
def test_fixes_beat_single_on_heldout(runs, seed):
    single = runs[("single", seed)].heldout_reward[-1]
    for method in ("vs", "ensemble", "population"):
        assert runs[(method, seed)].heldout_reward[-1] > single + 0.1, method


@pytest.mark.parametrize("seed", SEEDS)
def test_exploit_log_odds_grow_linearly_under_collapse(runs, seed):
    # Corollary 3.5: middle phase = logged steps with mode-exploit log-odds in [-1, 2], i.e. the
    # exploit holds 27%..88% of the mass: past the uniform start, before groups saturate (zero std).
    r = runs[("single", seed)]
    steps, lo = np.array(r.steps, dtype=float), np.array(r.exploit_log_odds)
    mid = (lo >= -1.0) & (lo <= 2.0)
    assert mid.sum() >= 5
    slope, intercept = np.polyfit(steps[mid], lo[mid], 1)
    resid = lo[mid] - (slope * steps[mid] + intercept)
    r2 = 1 - resid.var() / lo[mid].var()
    assert slope > 0 and r2 > 0.9
    # z-scored advantages cap the expected log-odds step at about 2 lr sqrt(p (1 - p)) <= lr
    assert slope <= r.config.lr
    # under VS the same strategy's log-odds fall: the growth is caused by the collapsed simulator
    vs = runs[("vs", seed)]
    assert vs.exploit_log_odds[-1] < vs.exploit_log_odds[0]


def test_cooperative_cotraining_does_not_fix_collapse():
    base = LabConfig(method="cotrain", steps=200)
    adversarial = run_lab(base)
    cooperative = run_lab(replace(base, cotrain_reward="cooperative"))
    assert cooperative.train_reward[-1] > adversarial.train_reward[-1]
    assert adversarial.heldout_reward[-1] > cooperative.heldout_reward[-1] + 0.1


# ---------------------------------------------------------------- CLI


def _parse(argv: list[str]) -> argparse.Namespace:
    from collapse_probe.cli import lab as lab_cli

    parser = argparse.ArgumentParser()
    lab_cli.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["lab", *argv])


def test_cli_choices_match_the_api():
    from collapse_probe.cli import lab as lab_cli
    from collapse_probe.trainers.advantages import SIMULATOR_REWARD_MODES

    assert lab_cli.METHOD_CHOICES == METHODS
    assert lab_cli.COTRAIN_REWARDS == SIMULATOR_REWARD_MODES


def test_cli_single_run_writes_results_and_report(tmp_path, capsys):
    from collapse_probe.cli import lab as lab_cli

    out = tmp_path / "run"
    assert lab_cli.run(_parse(["--method", "vs", "--steps", "40", "--seed", "1", "--out", str(out)])) == 0
    data = json.loads((out / "results.json").read_text())
    assert data["method"] == "vs" and data["steps"][-1] == 40 and data["config"]["seed"] == 1
    html = (out / "report.html").read_text()
    assert "plotly" in html.lower() and "held-out reward" in html and len(html) > 1_000_000  # plotly.js inlined
    assert "vs" in capsys.readouterr().out


def test_cli_compare(tmp_path, capsys):
    from collapse_probe.cli import lab as lab_cli

    assert lab_cli.run(_parse(["--compare", "--steps", "30", "--out", str(tmp_path)])) == 0
    data = json.loads((tmp_path / "compare.json").read_text())
    assert set(data["methods"]) == set(METHODS)
    assert (tmp_path / "compare.html").exists()
    printed = capsys.readouterr().out
    assert all(m in printed for m in METHODS)


@pytest.mark.parametrize(
    "argv, flag",
    [(["--method", "rl"], "--method"), (["--steps", "0"], "--steps"), (["--cotrain-reward", "x"], "--cotrain-reward")],
)
def test_cli_bad_flags_name_the_flag(tmp_path, argv, flag):
    from collapse_probe.cli import lab as lab_cli

    with pytest.raises(ConfigError, match=flag):
        lab_cli.run(_parse([*argv, "--out", str(tmp_path)]))
