"""The typed reward statistics (:class:`~collapse_probe.metrics.rewards.CellStats`, ``RewardStats``, the
cross-play ``TransferRow``) hold exactly the keys the functions return and ``results.json`` reads."""

from __future__ import annotations

from collapse_probe.core._records import ConversationRecord
from collapse_probe.metrics.rewards import CellStats, RewardStats, summarize_rewards
from collapse_probe.pipelines.crossplay import CrossplayConfig, TransferRow, crossplay_results
from collapse_probe.results import CrossplayResults


def _keys(typed: type) -> set[str]:
    return set(typed.__annotations__) | {k for base in typed.__mro__[1:] for k in getattr(base, "__annotations__", {})}


def test_the_cells_and_transfer_rows_are_what_their_types_declare():
    recs = [
        ConversationRecord.make(policy="p", simulator=s, task_id=f"t{t}", rollout=g, reward=float((t + g) % 2),
                                success=(t + g) % 2 == 1)
        for s in ("train", "held") for t in range(3) for g in range(2)
    ]  # fmt: skip
    recs.append(ConversationRecord.make(policy="p", simulator="held", task_id="t0", rollout=2, status="infra_error",
                                        infra_error="timeout"))  # fmt: skip
    cfg = CrossplayConfig(policies=["p"], simulators=["train", "held"], train_simulator="train", tasks=3, rollouts=3)
    res = crossplay_results(recs, cfg, reward_range=(0.0, 1.0))
    for cell in res["cells"]:
        assert set(cell) == _keys(CellStats) == set(CellStats.__required_keys__)
    assert res["cells"][1]["infra_errors"] == {"timeout": 1}
    assert set(res["transfer"][0]) == _keys(TransferRow) == set(TransferRow.__required_keys__)
    assert set(summarize_rewards(recs)) == _keys(RewardStats)
    CrossplayResults.build(res)  # the results model reads every one of them
