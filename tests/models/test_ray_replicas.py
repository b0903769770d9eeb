"""Model replicas on Ray: splitting, identical results with and without Ray, a replica killed mid-run.

The cluster tests start an in-process cluster of 2 CPUs and shut it down; they are skipped where
``ray`` is not installed.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.models import GenerationRequest, SamplingParams, get_model
from collapse_probe.models.ray_replicas import parse_replicas, replica_plan, split_batch

REPO = Path(__file__).resolve().parents[2]


def _req(text: str, n: int, first: int = 0) -> GenerationRequest:
    return GenerationRequest(messages=({"role": "user", "content": text},), n=n, first_sample=first,
                             params=SamplingParams(seed=7))  # fmt: skip


# ---- pure parts ----------------------------------------------------------------------------------


def test_split_batch_covers_every_sample_once_in_balanced_contiguous_ranges():
    reqs = [_req("a", 5), _req("b", 1), _req("c", 13, first=4), _req("d", 2)]
    for parts in (1, 2, 3, 4, 7, 21, 50):
        chunks = split_batch(reqs, parts)
        assert len(chunks) == min(parts, 21)
        sizes = [sum(sub.n for _, sub in c) for c in chunks]
        assert max(sizes) - min(sizes) <= max(sizes) // 2 + 1
        seen: dict[int, list[int]] = {}
        for chunk in chunks:
            for i, sub in chunk:
                assert sub.fingerprint() == reqs[i].fingerprint()
                seen.setdefault(i, []).extend(range(sub.first_sample, sub.first_sample + sub.n))
        for i, r in enumerate(reqs):  # in order, no gaps, no repeats
            assert seen[i] == list(range(r.first_sample, r.first_sample + r.n))


def test_split_samples_draw_what_the_whole_request_draws(write_scripted):
    import asyncio

    model = get_model(write_scripted([("x", 0.3), ("y", 0.3), ("z", 0.4)], name="split.json"))
    req = _req("hello", 40)
    whole = [c.text for c in asyncio.run(model.generate([req]))[0].completions]
    parts = [sub for chunk in split_batch([req], 3) for _, sub in chunk]
    split = [c.text for res in asyncio.run(model.generate(parts)) for c in res.completions]
    assert split == whole


def test_http_replicas_share_one_concurrency_budget():
    _, opts = replica_plan("openai/gpt-5-mini", {"concurrency": 10, "replicas": 3}, 3)
    assert [o["concurrency"] for o in opts] == [4, 3, 3]
    assert all("replicas" not in o for o in opts)
    res, opts = replica_plan("openai/gpt-5-mini", {}, 2)
    assert res.num_cpus == 0 and sum(o["concurrency"] for o in opts) == 16
    with pytest.raises(ConfigError, match="concurrency budget"):
        replica_plan("openai/gpt-5-mini", {"concurrency": 2}, 3)
    res, _ = replica_plan("vllm/Qwen/Qwen3-8B", {"tensor_parallel_size": 4}, 2)
    assert (res.num_gpus, res.tensor_parallel) == (4, 4)
    res, _ = replica_plan("local/smollm2-135m", {}, 2)
    assert (res.num_cpus, res.num_gpus) == (1, 0)


def test_integer_replica_options_are_read_from_text_and_refused_in_one_line_otherwise():
    from collapse_probe.models.ray_replicas import RaySession

    assert replica_plan("vllm/Qwen/Qwen3-8B", {"tensor_parallel_size": "2"}, 1)[0].tensor_parallel == 2
    with pytest.raises(ConfigError, match=r"^vllm/m: option tensor_parallel_size must be an integer, got \[4\]$"):
        replica_plan("vllm/m", {"tensor_parallel_size": [4]}, 2)
    session = RaySession("local")
    assert session.replicas_for("openai/m", {"replicas": "3"}) == 3
    with pytest.raises(ConfigError, match=r"option replicas must be an integer, got \{'n': 3\}"):
        session.replicas_for("openai/m", {"replicas": {"n": 3}})


def test_hf_replicas_ask_for_gpus_when_the_cluster_has_them():
    from collapse_probe.models.ray_replicas import replica_plan

    assert replica_plan("hf/./m", {}, 2, cluster_gpus=4)[0].num_gpus == 1  # as it would run in-process on CUDA
    assert replica_plan("hf/./m", {}, 2, cluster_gpus=0)[0].num_gpus == 0
    assert replica_plan("hf/./m", {"device": "cpu"}, 2, cluster_gpus=4)[0].num_gpus == 0
    assert replica_plan("local/smollm2-135m", {}, 2, cluster_gpus=4)[0].num_gpus == 0  # embedded: CPU by default
    assert replica_plan("local/smollm2-135m", {"device": "cuda"}, 2)[0].num_gpus == 1


def test_parse_replicas():
    assert parse_replicas("3") == (3, {})
    assert parse_replicas("2,smollm2=4") == (2, {"local/smollm2-135m": 4})
    for bad in ("0", "two", "smollm2=0", "2,=x"):
        with pytest.raises(ConfigError, match="--replicas"):
            parse_replicas(bad)


def test_replicas_without_a_cluster_is_a_clean_error(monkeypatch, capsys, tmp_path):
    from collapse_probe.cli import main

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    rc = main(["play", "--policy", "scripted:x.json", "--replicas", "2", "--out", str(tmp_path / "r")])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--ray-address" in err[0]


# ---- on a local cluster ------------------------------------------------------------------------


ray = pytest.importorskip("ray")

DONOR = {
    "responses": [
        {"text": "Maybe a little. [DONATE $1]", "p": 0.4},
        {"text": "Not today. [DONATE $0]", "p": 0.35},
        {"text": "For the children, yes! [DONATE $5]", "p": 0.25},
    ]
}
PERSUADER = {
    "responses": [
        {"text": "Every dollar feeds a child.", "p": 0.5},
        {"text": "Would you consider giving?", "p": 0.3},
        {"text": "Save the Children helps millions.", "p": 0.2},
    ]
}


def _write(path: Path, data: dict, delay: float = 0.0) -> str:
    path.write_text(json.dumps({**data, "delay_s": delay}))
    return f"scripted:{path}"


def _conversations(out: Path) -> dict[str, dict]:
    recs = {}
    for line in (out / "conversations.jsonl").read_text().splitlines():
        rec = json.loads(line)
        rec.pop("seconds")
        recs[rec["key"]] = rec
    return recs


@pytest.fixture(scope="module")
def cluster():
    """One in-process cluster of 2 CPUs for the tests below (starting one costs 5-20 s here)."""
    from collapse_probe.models.ray_replicas import start_ray

    start_ray(ray, "local", num_cpus=2)
    yield
    ray.shutdown()


def test_crossplay_on_local_cluster_equals_crossplay_without_ray(tmp_path, cluster):
    from collapse_probe.cli import main

    pol = _write(tmp_path / "pol.json", PERSUADER)
    sim = _write(tmp_path / "sim.json", DONOR)
    args = ["crossplay", "--policies", pol, "--sims", sim, "--tasks", "6", "--rollouts", "2", "--no-progress",
            "--no-cache"]  # fmt: skip
    assert main([*args, "--out", str(tmp_path / "plain")]) == 0
    # -M asks for more CPUs than the cluster has: the replicas then share the cores without a reservation
    argv = [
        *args,
        "--out",
        str(tmp_path / "ray"),
        "--ray-address",
        "local",
        "--replicas",
        "2",
        "-M",
        "replica_cpus=1.5",
    ]
    assert main(argv) == 0
    plain, on_ray = _conversations(tmp_path / "plain"), _conversations(tmp_path / "ray")
    assert len(plain) == 12 and plain == on_ray
    rewards = {k: r["reward"] for k, r in plain.items()}
    assert len(set(rewards.values())) > 1  # the scripted draws differ between conversations
    a = json.loads((tmp_path / "plain" / "results.json").read_text())
    b = json.loads((tmp_path / "ray" / "results.json").read_text())
    assert a["cells"] == b["cells"]


def test_replica_killed_mid_run_completes_with_the_same_results(tmp_path, cluster):
    from collapse_probe.models.ray_replicas import active_session, ray_replicas
    from collapse_probe.pipelines.crossplay import CrossplayConfig, run_crossplay

    # a slow simulator, so every batch is in flight long enough to be hit
    pol = _write(tmp_path / "pol.json", PERSUADER)
    sim = _write(tmp_path / "sim.json", DONOR, delay=0.4)
    config = CrossplayConfig(policies=[pol], simulators=[sim], tasks=3, rollouts=2, max_turns=3)
    plain = run_crossplay(config, out=tmp_path / "plain", progress=False, cache=False)

    killed: dict[str, int] = {}

    def killer(session) -> None:
        deadline = time.time() + 60
        while time.time() < deadline and len(killed) < 2:
            model = session.models.get(sim)
            if model is not None:
                loads, handles = model.in_flight(), model.actor_handles()
                if "restart" not in killed and loads[0] > 0:
                    killed["restart"] = ray.get(handles[0].describe.remote())["pid"]
                    ray.kill(handles[0], no_restart=False)  # Ray restarts it and re-runs its calls
                elif "replace" not in killed and "restart" in killed and loads[1] > 0:
                    killed["replace"] = 1
                    ray.kill(handles[1], no_restart=True)  # dead for good: the layer replaces it
            time.sleep(0.02)

    plain_fp = get_model(sim).fingerprint()
    with ray_replicas("local", replicas=2) as session:
        thread = threading.Thread(target=killer, args=(session,), daemon=True)
        thread.start()
        on_ray = run_crossplay(config, out=tmp_path / "ray", progress=False, cache=False)
        thread.join(timeout=5)
        model = session.models[sim]
        assert set(killed) == {"restart", "replace"}
        new_pid = ray.get(model.actor_handles()[0].describe.remote())["pid"]
        assert new_pid != killed["restart"]
        assert model.stats_.replaced >= 1
        assert model.fingerprint() == plain_fp  # cache keys and run configs unchanged
        assert active_session() is session
        with pytest.raises(ConfigError, match="enable_lora"):  # LoRA views need a vLLM backend with LoRA
            model.with_lora(tmp_path)
        handles = model.actor_handles()
    assert active_session() is None
    # the session's actors end with it (asynchronously: an actor may answer once more while it is torn down)
    ended = False
    for _ in range(30):
        try:
            ray.get(handles[0].describe.remote(), timeout=5)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            ended = True
            break
        time.sleep(1)
    assert ended, "the session's replica actors outlived the session"
    assert _conversations(tmp_path / "plain") == _conversations(tmp_path / "ray")
    assert plain["cells"] == on_ray["cells"]


def test_a_bad_spec_fails_on_the_driver_with_the_same_one_line_error(tmp_path, cluster):
    from collapse_probe.models.ray_replicas import ray_replicas

    missing = f"scripted:{tmp_path / 'missing.json'}"
    with pytest.raises(ConfigError) as plain:
        get_model(missing)
    with ray_replicas("local", replicas=1), pytest.raises(ConfigError) as on_ray:
        get_model(missing)
    assert str(on_ray.value) == str(plain.value)
    # GPU replicas that a local cluster could never place are refused at once, before anything loads
    with ray_replicas("local", replicas=2), pytest.raises(ConfigError, match="ask for 2 GPU.*has 0 GPU"):
        get_model(missing, replica_gpus=1)


@pytest.mark.slow
def test_http_replicas_keep_the_concurrency_budget_and_the_answers(cluster):
    import asyncio

    from collapse_probe.models._usage import LEDGER
    from collapse_probe.models.ray_replicas import ray_replicas
    from tests.models._servers import WireServer, openai_router

    reqs = [_req(f"question {i}", 1) for i in range(24)]
    with WireServer(openai_router, latency=0.15) as srv:
        spec = f"openai-compatible/m@{srv.url}/v1"
        plain = asyncio.run(get_model(spec, concurrency=4).generate(reqs))
        peak_plain, srv.max_in_flight = srv.max_in_flight, 0
        spent_plain = LEDGER.snapshot()[spec]
        with ray_replicas("local", replicas=2) as session:
            on_ray = asyncio.run(get_model(spec, concurrency=4).generate(reqs))
            spread = session.models[spec].stats_.samples_per_replica
        spent_ray = LEDGER.snapshot()[spec].minus(spent_plain)  # the replicas' calls reach this ledger
    assert all(r.ok for r in on_ray), [r.error for r in on_ray if not r.ok][:1]
    assert [[c.text for c in r.completions] for r in on_ray] == [[c.text for c in r.completions] for r in plain]
    assert spread == [12, 12]
    assert peak_plain == 4 and srv.max_in_flight <= 4  # two replicas of 2 slots each: the one budget of 4
    assert spent_ray.requests == spent_plain.requests == 24
    assert (spent_ray.input_tokens, spent_ray.output_tokens) == (spent_plain.input_tokens, spent_plain.output_tokens)


def _ray_processes() -> set[tuple[int, str]]:
    import subprocess

    ps = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    procs = {(int(pid), args) for pid, _, args in (line.strip().partition(" ") for line in ps.splitlines())}
    return {(pid, args) for pid, args in procs if args.startswith("ray::") or "/ray/core/src/ray/" in args}


@pytest.mark.slow
def test_cli_local_cluster_starts_and_ends_with_the_run(tmp_path):
    import os
    import subprocess
    import sys

    before = _ray_processes()
    pol = _write(tmp_path / "pol.json", PERSUADER)
    sim = _write(tmp_path / "sim.json", DONOR)
    args = ["crossplay", "--policies", pol, "--sims", sim, "--tasks", "2", "--rollouts", "2", "--no-progress",
            "--no-cache"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    runs = {}
    for name, extra in (("plain", []), ("ray", ["--ray-address", "local", "--replicas", "2"])):
        cmd = [sys.executable, "-m", "collapse_probe.cli", *args, "--out", str(tmp_path / name), *extra]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        runs[name] = _conversations(tmp_path / name)
    assert runs["plain"] == runs["ray"]
    deadline = time.time() + 30  # the run's local cluster ends with it (its workers exit within seconds)
    while _ray_processes() - before and time.time() < deadline:
        time.sleep(0.5)
    assert not _ray_processes() - before


@pytest.mark.slow
def test_embedded_model_replicas_give_the_same_text(tmp_path):
    import asyncio

    from collapse_probe.models.ray_replicas import ray_replicas

    reqs = [_req(f"Say something about the number {i}.", 3) for i in range(4)]
    reqs = [
        GenerationRequest(messages=r.messages, n=3, params=SamplingParams(seed=i, max_tokens=12))
        for i, r in enumerate(reqs)
    ]
    with ray_replicas("local", replicas=2, num_cpus=2) as session:
        model = get_model("smollm2")
        on_ray = asyncio.run(model.generate(reqs))
        assert sorted(session.models["local/smollm2-135m"].stats_.samples_per_replica) == [6, 6]
    plain_model = get_model("smollm2")
    plain = asyncio.run(plain_model.generate(reqs))
    assert model.cache_namespace == plain_model.cache_namespace  # cache keys are unchanged
    assert model.fingerprint() == plain_model.fingerprint()
    assert [[c.text for c in r.completions] for r in on_ray] == [[c.text for c in r.completions] for r in plain]


LOSE_CLUSTER = """
import os, sys, threading, time
import psutil, ray
from collapse_probe.cli import main

def lose_cluster():  # once two conversations are recorded, every process of the cluster dies
    log = os.path.join(sys.argv[1], "conversations.jsonl")
    while not (os.path.exists(log) and len(open(log).readlines()) >= 2):
        time.sleep(0.05)
    node = ray._private.worker._global_node
    for p in node.all_processes.get("raylet", []):
        for child in psutil.Process(p.process.pid).children(recursive=True):
            child.kill()
    for kind in ("gcs_server", "raylet"):
        for p in node.all_processes.get(kind, []):
            p.process.kill()

threading.Thread(target=lose_cluster, daemon=True).start()
sys.exit(main([*sys.argv[2:], "--out", sys.argv[1], "--ray-address", "local", "--replicas", "2"]))
"""


@pytest.mark.slow
def test_a_run_whose_cluster_disappears_stops_cleanly_and_resumes(tmp_path):
    import os
    import subprocess
    import sys

    pytest.importorskip("psutil")
    pol = _write(tmp_path / "pol.json", PERSUADER)
    sim = _write(tmp_path / "sim.json", DONOR, delay=0.5)
    args = ["crossplay", "--policies", pol, "--sims", sim, "--tasks", "4", "--rollouts", "2", "--no-progress",
            "--no-cache", "--max-live", "2"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-c", LOSE_CLUSTER, str(out), *args], env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("collapse-probe crossplay: error: the Ray cluster serving") and "resumes" in last
    kept = _conversations(out)
    assert 2 <= len(kept) < 8
    # the same command (here without Ray) finishes the run; nothing recorded is run again
    cmd = [sys.executable, "-m", "collapse_probe.cli", *args, "--out"]
    assert subprocess.run([*cmd, str(out)], env=env, capture_output=True, timeout=300).returncode == 0
    assert subprocess.run([*cmd, str(tmp_path / "plain")], env=env, capture_output=True, timeout=300).returncode == 0
    resumed = _conversations(out)
    assert {k: resumed[k] for k in kept} == kept
    assert resumed == _conversations(tmp_path / "plain")
