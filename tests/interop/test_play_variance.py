"""A play run's ``results.json`` carries the reward variance decomposition of its rollouts."""

from __future__ import annotations

import json


def test_play_results_carry_the_decomposition(tau2_play_run):
    res = json.loads((tau2_play_run / "results.json").read_text(encoding="utf-8"))
    var = res["variance"]
    assert (
        var["n_tasks"] == 2 and var["n_trials"] == 12 and set(var["shares"]) == {"task", "simulator", "agent", "judge"}
    )
    # the scripted agent answers every prefix the same way: no pair of trials was set off by it
    assert var["divergence"]["agent"] == 0 and var["identical_prefixes"]["agent"]["varied"] == 0
    assert var["identical_prefixes"]["simulator"]["varied"] >= 1
    if var["shares"]["agent"] is not None:
        assert var["shares"]["agent"]["estimate"] == 0.0
    assert set(var["pass_k"]) == {str(k) for k in range(1, 7)}
