"""A benchmark from a separately installed distribution (entry point only, nothing changed here) runs
``play``, ``audit`` and ``crossplay`` from the CLI with its own option as a flag, and from the Python API.

The distribution is built in a temporary directory and installed with pip (offline, no build isolation)
onto a ``--target`` directory that only the subprocesses see on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

PLUGIN = '''
"""A hotel's follow-up call: the guest (simulator) says whether they would recommend the hotel."""

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from collapse_probe.benchmarks import Benchmark, BenchmarkOptions, Episode, ProbeSpec, Score, Task, TurnPrompt

ASK = "Would you recommend us to a friend? Answer [YES] or [NO]."


class Options(BenchmarkOptions):
    room_type: Literal["single", "suite"] = Field("single", description="the room the guests stayed in")
    guests: int = Field(3, ge=1, le=50, description="guests called")


@dataclass
class HotelSurveyArena:
    room_type: str = "single"
    guests: int = 3
    name: str = "hotel-survey"
    reward_range = (0.0, 1.0)
    fallback_partition = "label"

    def load_tasks(self, n=None, split=None, seed=0):
        k = self.guests if n is None else min(n, self.guests)
        return [Task(f"{self.room_type}-guest-{i}", {"room": self.room_type}, split) for i in range(k)]

    def new_episode(self, task, seed):
        return Episode(task=task, seed=seed)

    def next_side(self, episode):
        if episode.messages and episode.messages[-1]["role"] == "simulator":
            episode.done, episode.status = True, "done"
            return None
        return "policy" if not episode.messages else "simulator"

    def prompt_for(self, episode, side):
        lines = [m["content"] for m in episode.messages]
        return TurnPrompt(messages=[{"role": "user", "content": f"Your {self.room_type} room."}],
                          prompt="\\n".join([*lines, "Guest:"]), stop=("\\n",), max_tokens=16)

    def apply(self, episode, side, completion, text):
        episode.messages.append({"role": side, "content": text.strip()})

    async def score(self, episodes):
        return [Score(1.0 if "[YES]" in e.messages[-1]["content"] else 0.0) for e in episodes]

    def probe_states(self, tasks):
        hello = [{"role": "policy", "content": f"Hello, how was the {self.room_type}?"}]
        out = []
        for t in tasks:
            out.append(ProbeSpec(t, "opening", hello))
            out.append(ProbeSpec(t, "elicitation", [*hello, {"role": "policy", "content": ASK}], asks_decision=True))
        return out

    def decision_label(self, text):
        return "yes" if "[YES]" in text else "no" if "[NO]" in text else "undecided"


BENCHMARK = Benchmark(
    "hotel-survey",
    Options,
    build=lambda options, context: HotelSurveyArena(options.room_type, options.guests),
)


def make_replay_model(spec, name, **options):
    """A model backend ``replay/FILE.json``: the scripted model of that file under another prefix."""
    from collapse_probe.models.scripted import make_scripted_model

    return make_scripted_model(f"scripted:{name}", name, **options)


class FirstWordPartitioner:
    """Replies are equivalent when they start with the same word."""

    name = "first-word"

    def partition(self, texts):
        firsts = [(t.split() or [""])[0] for t in texts]
        return [sorted(set(firsts), key=firsts.index).index(f) for f in firsts]


class AskJudgePartitioner:
    """Asks a judge model: only a caller with a judge (the audit) can build it."""

    name = "ask-judge"
    needs_model = True

    def __init__(self, model):
        self.model = model

    def partition(self, texts):
        return list(range(len(texts)))
'''

PYPROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "hotel-survey-benchmark"
version = "0.1"

[tool.setuptools]
py-modules = ["hotel_survey"]

[project.entry-points."collapse_probe.benchmarks"]
hotel-survey = "hotel_survey:BENCHMARK"

[project.entry-points."collapse_probe.models"]
replay = "hotel_survey:make_replay_model"

[project.entry-points."collapse_probe.partitioners"]
first-word = "hotel_survey:FirstWordPartitioner"
ask-judge = "hotel_survey:AskJudgePartitioner"
"""


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("dist")
    (src / "pyproject.toml").write_text(PYPROJECT)
    (src / "hotel_survey.py").write_text(PLUGIN)
    target = tmp_path_factory.mktemp("site")
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
           "--target", str(target), str(src)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        pytest.skip(f"cannot build a local distribution here: {proc.stderr.strip().splitlines()[-1:]}")
    assert list(target.glob("hotel_survey_benchmark-*.dist-info/entry_points.txt"))
    return target


def _env(plugin_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLLAPSE_PROBE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(plugin_path), str(REPO)])
    env.update(extra)
    return env


def _cli(plugin_path: Path, *args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "collapse_probe.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=_env(plugin_path, **env), timeout=300)  # fmt: skip


def _scripted(path: Path, replies: list[tuple[str, float]]) -> str:
    path.write_text(json.dumps({"responses": [{"text": t, "p": p} for t, p in replies]}))
    return f"scripted:{path}"


@pytest.fixture
def models(tmp_path) -> tuple[str, str]:
    hotel = _scripted(tmp_path / "hotel.json", [("Hello, how was your stay?", 1.0)])
    guest = _scripted(tmp_path / "guest.json", [("[YES] Lovely.", 0.6), ("[NO] Noisy.", 0.4)])
    return hotel, guest


def test_the_plugin_runs_play_audit_and_crossplay_with_its_own_option_as_a_flag(plugin_path, models, tmp_path):
    hotel, guest = models
    play = _cli(plugin_path, "play", "--benchmark", "hotel-survey", "--room-type", "suite", "--policy", hotel,
                "--sim", guest, "--tasks", "2", "--rollouts", "2", "--no-cache", "--out", "play", cwd=tmp_path)  # fmt: skip
    assert play.returncode == 0, play.stderr
    rows = [json.loads(line) for line in (tmp_path / "play" / "conversations.jsonl").read_text().splitlines()]
    assert {r["task_id"] for r in rows} == {"suite-guest-0", "suite-guest-1"}  # the option reached the arena
    arena = json.loads((tmp_path / "play" / "config.json").read_text())["arena"]
    assert arena["benchmark"] == "hotel-survey" and arena["room_type"] == "suite" and arena["guests"] == 3

    audit = _cli(plugin_path, "audit", "--benchmark", "hotel-survey", "--room-type", "suite", "--sim", guest,
                 "--states", "2", "--samples", "40", "--partition", "exact", "--no-cache", "--out", "audit", cwd=tmp_path)  # fmt: skip
    assert audit.returncode == 0, audit.stderr
    res = json.loads((tmp_path / "audit" / "results.json").read_text())
    assert res["benchmark"] == "hotel-survey" and res["summary"]["n_states"] == 4
    # two replies at 0.6 / 0.4: ε = 0.4 at every state
    assert res["summary"]["collapse_error"]["estimate"] == pytest.approx(0.4, abs=0.2)

    # crossplay takes the option from the environment, as every flag
    xp = _cli(plugin_path, "crossplay", "--benchmark", "hotel-survey", "--policies", hotel, "--sims", guest,
              "--tasks", "2", "--rollouts", "1", "--no-cache", "--out", "xp", cwd=tmp_path,
              COLLAPSE_PROBE_ROOM_TYPE="suite")  # fmt: skip
    assert xp.returncode == 0, xp.stderr
    config = json.loads((tmp_path / "xp" / "config.json").read_text())
    assert config["arena"]["room_type"] == "suite" and config["extra"]["room_type"] == "suite"
    xp_rows = [json.loads(line) for line in (tmp_path / "xp" / "conversations.jsonl").read_text().splitlines()]
    assert {r["task_id"] for r in xp_rows} == {"suite-guest-0", "suite-guest-1"}


def test_the_plugin_options_come_from_config_files_and_are_named_when_bad(plugin_path, models, tmp_path):
    hotel, guest = models
    (tmp_path / "run.toml").write_text(f'benchmark = "hotel-survey"\nroom-type = "suite"\nguests = 1\nsim = "{guest}"\n'
                                       f'policy = "{hotel}"\ntasks = 1\nrollouts = 1\nout = "cfg"\n')  # fmt: skip
    ok = _cli(plugin_path, "play", "--config", "run.toml", "--no-cache", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert json.loads((tmp_path / "cfg" / "config.json").read_text())["arena"]["guests"] == 1

    helped = _cli(plugin_path, "play", "--benchmark", "hotel-survey", "--help", cwd=tmp_path)
    assert "--room-type" in helped.stdout and "the room the guests stayed in" in helped.stdout

    bad = _cli(plugin_path, "play", "--benchmark", "hotel-survey", "--room-type", "attic", "--policy", hotel,
               "--sim", guest, "--out", "bad", cwd=tmp_path)  # fmt: skip
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    line = bad.stderr.strip().splitlines()[-1]
    assert "--room-type" in line and "'single'" in line and "'suite'" in line and "'attic'" in line

    typo = _cli(plugin_path, "play", "--benchmark", "hotel-survey", "--guests", "0", "--out", "typo", cwd=tmp_path)
    assert typo.returncode == 2 and "--guests" in typo.stderr and "greater than or equal to 1" in typo.stderr

    unknown = _cli(plugin_path, "play", "--benchmark", "hotel-survy", "--out", "u", cwd=tmp_path)
    assert unknown.returncode == 2 and "Did you mean 'hotel-survey'" in unknown.stderr


API = """
import json, sys
from collapse_probe.pipelines.audit import AuditConfig, run_audit
from collapse_probe.benchmarks import benchmark_names
from collapse_probe.pipelines.crossplay import CrossplayConfig, run_crossplay
from collapse_probe.errors import ConfigError
from collapse_probe.metrics import get_partitioner
from collapse_probe.integrations.monitor import MonitorConfig
from collapse_probe.trainers import TrainConfig
from collapse_probe.models import get_model
from collapse_probe.pipelines.play import PlayConfig, run_play
from collapse_probe.rollout.runspec import ArenaSpec
from collapse_probe.simulators import make_participant

hotel, guest, out = sys.argv[1:4]
assert "hotel-survey" in benchmark_names()
arena = ArenaSpec("hotel-survey", {"room_type": "suite", "guests": 2}).build([hotel, guest])
participants = {s: make_participant(s, cache=False) for s in (hotel, guest)}
records = run_play(PlayConfig(policy=hotel, sim=guest, benchmark="hotel-survey", tasks=2, rollouts=1),
                   arena, participants, out + "/play", progress=False).conversations
audit = run_audit(AuditConfig(sim=guest, benchmark="hotel-survey", states=2, samples=30, partition="exact"),
                  out + "/audit", arena=arena, progress=False, cache=False)
xp = run_crossplay(CrossplayConfig(policies=[hotel], simulators=[guest], benchmark="hotel-survey", tasks=2,
                                   rollouts=1, extra={"room_type": "suite"}), out=out + "/xp", progress=False,
                   cache=False, report=False)
replay = get_model("replay/" + guest.split(":", 1)[1])
TrainConfig(partitioner="first-word")
MonitorConfig(partition="first-word", strategy_partition="first-word").validate()
try:
    MonitorConfig(partition="ask-judge").validate()
    refused = ""
except ConfigError as exc:
    refused = str(exc)
print(json.dumps({"tasks": sorted({r.task_id for r in records}), "n_states": audit["summary"]["n_states"],
                  "cells": len(xp["cells"]), "xp_n": xp["cells"][0]["n"], "replay": type(replay).__name__,
                  "classes": get_partitioner("first-word").partition(["[YES] a", "[NO] b", "[YES] c"]),
                  "monitor_refuses_a_judge": "needs a judge model" in refused}))
"""


def test_the_plugin_runs_from_the_python_api(plugin_path, models, tmp_path):
    hotel, guest = models
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(API), hotel, guest, str(tmp_path)],
                          capture_output=True, text=True, env=_env(plugin_path), cwd=tmp_path, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (
        got.pop("replay") == type(__import__("collapse_probe.models", fromlist=["get_model"]).get_model(guest)).__name__
    )
    assert got == {
        "tasks": ["suite-guest-0", "suite-guest-1"],
        "n_states": 4,
        "cells": 1,
        "xp_n": 2,
        "classes": [0, 1, 0],
        "monitor_refuses_a_judge": True,
    }


TRAIN = """
import json, sys
from collapse_probe.cli import build_parser
from collapse_probe.cli._config import parse_args
from collapse_probe.cli.train import config_from_args
from collapse_probe.trainers import TrainConfig
from collapse_probe.trainers.llm import build_arena

config = config_from_args(parse_args(build_parser(), ["train", "--benchmark", "hotel-survey", *sys.argv[1:]]))
arena = build_arena(config)
again = TrainConfig.from_dict(config.to_dict())
print(json.dumps({"options": config.arena.options, "recorded": config.to_dict().get("arena_options"),
                  "tasks": [t.task_id for t in arena.load_tasks(config.tasks, seed=config.seed)],
                  "resumes": again == config}))
"""


def test_the_plugin_options_reach_the_trainers_arena_from_flags_and_environment(plugin_path, tmp_path):
    def run(*args: str, **env: str) -> dict:
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(TRAIN), *args], capture_output=True, text=True,
                              env=_env(plugin_path, **env), cwd=tmp_path, timeout=300)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    got = run("--room-type", "suite", "--guests", "2", "--tasks", "3")
    assert got["options"] == got["recorded"] == {"room_type": "suite", "guests": 2}
    assert got["tasks"] == ["suite-guest-0", "suite-guest-1"] and got["resumes"]
    assert run(COLLAPSE_PROBE_ROOM_TYPE="suite")["options"] == {"room_type": "suite"}


def test_installed_model_backends_are_found_by_their_prefix(plugin_path, models, tmp_path):
    hotel, guest = models
    replay = "replay/" + guest.split(":", 1)[1]
    play = _cli(plugin_path, "play", "--benchmark", "hotel-survey", "--policy", hotel, "--sim", replay,
                "--tasks", "1", "--rollouts", "2", "--no-cache", "--out", "play", cwd=tmp_path)  # fmt: skip
    assert play.returncode == 0, play.stderr
    rows = [json.loads(line) for line in (tmp_path / "play" / "conversations.jsonl").read_text().splitlines()]
    assert {r["messages"][-1]["content"] for r in rows} <= {"[YES] Lovely.", "[NO] Noisy."}
    typo = _cli(plugin_path, "play", "--sim", "replai/x.json", "--out", "typo", cwd=tmp_path)
    assert typo.returncode == 2 and "replay/" in typo.stderr


def test_an_installed_partitioner_is_chosen_by_audit_and_crossplay_flags_where_its_needs_allow(
    plugin_path, models, tmp_path
):
    hotel, guest = models
    audit = _cli(plugin_path, "audit", "--benchmark", "hotel-survey", "--sim", guest, "--states", "2",
                 "--samples", "40", "--partition", "first-word", "--no-cache", "--out", "audit", cwd=tmp_path)  # fmt: skip
    assert audit.returncode == 0, audit.stderr
    res = json.loads((tmp_path / "audit" / "results.json").read_text())
    assert res["partitioner"] == "first-word"
    assert res["verdicts"]["meaning"]["classes"] == "first-word (not by meaning)"  # judged: it was asked for
    # "[YES] Lovely." 0.6 / "[NO] Noisy." 0.4: two first words, ε = 0.4 at every state
    assert res["summary"]["collapse_error"]["estimate"] == pytest.approx(0.4, abs=0.2)

    xp = _cli(plugin_path, "crossplay", "--benchmark", "hotel-survey", "--policies", hotel, "--sims", guest,
              "--tasks", "2", "--rollouts", "2", "--partitioner", "first-word", "--no-cache", "--out", "xp",
              cwd=tmp_path)  # fmt: skip
    assert xp.returncode == 0, xp.stderr
    xres = json.loads((tmp_path / "xp" / "results.json").read_text())
    [diversity] = xres["policy_diversity"]
    assert diversity["partitioner"] == "first-word" and diversity["n_classes"] == 1  # "Hello, ..." every time
    assert json.loads((tmp_path / "xp" / "config.json").read_text())["partitioner"] == "first-word"

    # a partitioner that needs a judge model is refused where there is none, in one line naming why
    judged = _cli(plugin_path, "crossplay", "--benchmark", "hotel-survey", "--policies", hotel, "--sims", guest,
                  "--partitioner", "ask-judge", "--no-cache", "--out", "xp2", cwd=tmp_path)  # fmt: skip
    assert judged.returncode == 2 and "Traceback" not in judged.stderr
    line = judged.stderr.strip().splitlines()[-1]
    assert "--partitioner must be one of exact, embedding, disclosure, first-word" in line and "'ask-judge'" in line
    assert "needs a judge model" in line
    typo = _cli(plugin_path, "audit", "--benchmark", "hotel-survey", "--sim", guest, "--partition", "first-wrd",
                "--no-cache", "--out", "typo", cwd=tmp_path)  # fmt: skip
    assert typo.returncode == 2 and "Traceback" not in typo.stderr
    line = typo.stderr.strip().splitlines()[-1]
    assert "--partition: unknown partitioner 'first-wrd'." in line
    assert "Known: exact, embedding, disclosure, judge, label, ask-judge, first-word" in line
    assert "Did you mean 'first-word'" in line
