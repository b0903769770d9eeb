"""vLLM replicas that share a GPU start one after another (a local Ray cluster with a declared GPU,
the stand-in ``vllm`` of ``stand_in_vllm/``; no real GPU is used).

vLLM measures the free GPU memory while its engine starts and assumes no other process changes it
meanwhile, so two engines profiling one GPU at the same moment size their caches wrongly. With
``replica_gpus < 1`` the replica layer starts each engine fully before the next; whole-GPU replicas
start as before (each engine on first use).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

STAND_IN = Path(__file__).parent / "stand_in_vllm"


@pytest.fixture(scope="module")
def gpu_cluster(tmp_path_factory):
    log = tmp_path_factory.mktemp("vllm") / "events.jsonl"
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "STAND_IN_VLLM_LOG", "STAND_IN_VLLM_START_SECONDS")}
    # the actors' workers inherit the environment of the cluster started here
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(STAND_IN), str(Path(__file__).resolve().parents[2]), saved["PYTHONPATH"] or ""]
    )
    os.environ["STAND_IN_VLLM_LOG"] = str(log)
    os.environ["STAND_IN_VLLM_START_SECONDS"] = "1.5"
    for attempt in range(3):  # a loaded machine can miss Ray's fixed start-up window (as start_ray retries)
        try:
            ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
                     object_store_memory=100 * 1024**2)  # fmt: skip
            break
        except Exception:
            ray.shutdown()
            if attempt == 2:
                raise
    try:
        yield log
    finally:
        ray.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _builds(log: Path, model: str) -> list[tuple[float, float]]:
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    start = {r["pid"]: r["t"] for r in rows if r["event"] == "build" and r["model"] == model}
    done = {r["pid"]: r["t"] for r in rows if r["event"] == "built" and r["model"] == model}
    return sorted((start[p], done[p]) for p in start)


def test_engines_sharing_a_gpu_start_one_after_another(gpu_cluster):
    from collapse_probe.models.ray_replicas import RayReplicaModel

    shared = RayReplicaModel("vllm/shared", {"replica_gpus": 0.5, "replica_cpus": 0}, 2)
    try:
        assert shared.shares_gpus
        (s1, e1), (s2, e2) = _builds(gpu_cluster, "shared")
        assert e1 <= s2  # the second engine began only once the first was up
    finally:
        shared.close()
