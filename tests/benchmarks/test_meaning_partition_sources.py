"""The meaning-partition benchmark holds out each benchmark source its states name (no empty row)."""

import importlib.util
from pathlib import Path

import numpy as np

from collapse_probe.metrics._service import LabelledState, state_group

ROOT = Path(__file__).resolve().parents[2]


def _benchmark():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("meaning_partition", ROOT / "benchmarks" / "meaning_partition.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _state(source: str, task: str) -> LabelledState:
    rec = {"source": source, "domain": "airline", "task_id": task}
    return LabelledState(found=[frozenset()], emb=np.zeros((1, 2)), labels=[0], group=state_group(rec))


def test_every_source_of_the_states_is_held_out_once() -> None:
    states = [
        _state("sierra-research/tau-bench historical_trajectories/gpt-4o-airline.json", "3"),
        _state("blakeelias/tau2-bench data/simulations/2025-10-13T11:33:36.json", "7"),
        _state("blakeelias/tau2-bench data/simulations/2025-10-08T08:45:32.json", "8"),
    ]
    sources = _benchmark().benchmark_sources(states)
    assert len(sources) == 2
    for source in sources:  # each names at least one state, so no held-out row is empty
        assert any(st.group.startswith(source + ":") for st in states)
