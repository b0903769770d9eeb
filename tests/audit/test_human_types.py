"""The human-reference summaries are typed (``GroundingSummary``, ``ShareEstimate``, ``StateEpsilon``,
``MeanEpsilon``): what the functions return has exactly the declared keys."""

from __future__ import annotations

from collapse_probe.pipelines.audit._human import (
    GroundingSummary,
    MeanEpsilon,
    ShareEstimate,
    StateEpsilon,
    _eps,
    _mean_eps,
    grounding_summary,
)


def _fits(obj: dict, typed: type) -> bool:
    # the module's annotations are strings: a NotRequired key is told by its annotation's text
    required = {k for k, v in typed.__annotations__.items() if "NotRequired[" not in str(v)}
    return required <= set(obj) <= set(typed.__annotations__)


def test_the_human_reference_numbers_are_what_their_types_declare():
    rows = [{"human_class_share": s, "outside": s == 0.0, "human_class_rank": r}
            for s, r in ((0.5, 1), (0.0, None), (0.25, 2), (0.75, 1))]  # fmt: skip
    summary = grounding_summary(rows, n_boot=200, seed=0)
    assert _fits(summary, GroundingSummary) and summary["n_states"] == 4
    for key in ("human_class_share", "outside_share", "human_is_mode_share"):
        assert _fits(summary[key], ShareEstimate) and summary[key]["n"] == 4
    assert _fits(grounding_summary([]), GroundingSummary) and grounding_summary([])["outside_share"]["ci95"] is None
    assert _fits(_eps([5, 3, 0], seed=0), StateEpsilon)
    assert _fits(_mean_eps([[5, 3], [8]], seed=0), MeanEpsilon) and _fits(_mean_eps([], seed=0), MeanEpsilon)
