"""``train`` warns when every group of every step had zero reward variance: nothing was learned."""

from __future__ import annotations

from collapse_probe.report.terminal import zero_variance_warning


def _results(shares):
    steps = [{"step": i + 1, "train_reward": 0.0, "zero_std_share": s} for i, s in enumerate(shares)]
    return {"schema": "collapse-probe/train/v1", "method": "single", "steps": len(steps), "first": steps[0],
            "final": steps[-1], "mean": {"zero_std_share": sum(shares) / len(shares)}}  # fmt: skip


def test_every_group_without_reward_variance_is_a_warning_that_says_nothing_was_learned():
    warning = zero_variance_warning(_results([1.0, 1.0, 1.0]))
    assert warning is not None and "learned nothing" in warning and "all 3 steps" in warning
    assert "vs:SPEC" in warning and "--group-size" in warning


def test_one_group_with_variance_anywhere_is_no_warning():
    assert zero_variance_warning(_results([1.0, 0.75, 1.0])) is None  # the mean says a middle step had signal
    assert zero_variance_warning(_results([0.5])) is None
