"""Hostile values in the option sources the CLI parses itself: ``--config`` files, ``$COLLAPSE_PROBE_*``
(``$COLLAPSE_PROBE_CONFIG`` among them), ``-M ROLE.key=VALUE`` and structured flags (JSON lists).

Each case runs as its own process (the machinery of :mod:`hostile_cases`) with a 60 s limit and must
be refused with exit 2 and exactly one error line naming the flag, variable or file at fault: no
traceback, no internal-error backstop, no hang (YAML alias bombs and cycles, integers past an
option's range, JSON nested thousands deep, a NUL byte in a YAML string, an abbreviated flag).

``python tests/reliability/test_hostile_config_inputs.py`` prints the table.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostile_cases import REPO, Case, cli, run_case  # noqa: E402

pytestmark = pytest.mark.reliability

LIMIT = 60.0
"""Seconds a case may run: a refusal takes a few; a hang is what this limit catches."""

LEVELS = "abcdefghi"


def _level(i: int) -> str:
    """Level ``i`` of the bomb: nine copies of the level below (of ``lol`` at the bottom)."""
    items = ["lol"] * 9 if i == 0 else [f"*{LEVELS[i - 1]}"] * 9
    return f"&{LEVELS[i]} [{', '.join(items)}]"


BOMB = "".join(f"{n}: {_level(i)}\n" for i, n in enumerate(LEVELS))
"""A 9-level YAML "billion laughs": 9^9 values once its aliases are expanded."""
BOMB_FLOW = "[" + ", ".join(_level(i) for i in range(len(LEVELS))) + "]"
"""The same bomb as one flow value (a ``-M`` value or one key of a config file)."""
CYCLE = "&a [*a]"
"""A YAML alias that refers to the node it is in: an endless structure."""


def deep(n: int) -> str:
    return "[" * n + "]" * n


def config(command: str, text: str, *extra: str, name: str = "c.yaml", files: dict[str, str] | None = None):
    def build(d: Path) -> list[str]:
        (d / name).write_text(text)
        (d / "s.json").write_text(SIM)
        for other, content in (files or {}).items():
            (d / other).write_text(content)
        return cli(command, "--config", name, *extra)

    return build


def env_config(command: str, text: str, *extra: str):
    """The file in ``$COLLAPSE_PROBE_CONFIG`` (``c.yaml`` of the case's directory)."""

    def build(d: Path) -> list[str]:
        (d / "c.yaml").write_text(text)
        return cli(command, *extra)

    return build


SIM = '{"responses": [{"text": "Sure [DONATE $1]", "p": 0.5}, {"text": "No [DONATE $0]", "p": 0.5}]}'
"""A scripted simulator (``s.json`` in every case's directory), so a run gets as far as its options."""
SLOW = '{"responses": [{"text": "a", "p": 1.0}], "delay_s": 1e9}'
"""A scripted model that would wait 30 years per call."""


def args(*argv: str):
    def build(d: Path) -> list[str]:
        (d / "s.json").write_text(SIM)
        return cli(*argv)

    return build


RUN = ("--sim", "scripted:s.json", "--out", "o", "--no-progress")
GATE = ("runs/none", "--policy", "p")

CASES = [
    # ---- YAML aliases: a bomb or a cycle, in a --config file, $COLLAPSE_PROBE_CONFIG or a -M value
    Case("--config 9-level alias bomb: audit", "yaml", config("audit", BOMB), names=("c.yaml", "alias")),
    Case("--config 9-level alias bomb: crossplay", "yaml", config("crossplay", BOMB), names=("c.yaml", "alias")),
    Case("--config 9-level alias bomb: gate", "yaml", config("gate", BOMB, *GATE), names=("c.yaml", "alias")),
    Case("--config alias bomb under a key", "yaml", config("audit", f"sim: {BOMB_FLOW}\n"), names=("c.yaml", "alias")),
    Case("--config recursive alias: audit", "yaml", config("audit", f"sim: {CYCLE}\n"), names=("c.yaml", "alias")),
    Case(
        "--config recursive alias: gate", "yaml", config("gate", f"policy: {CYCLE}\n", "x"), names=("c.yaml", "alias")
    ),
    Case("--config recursive mapping alias", "yaml", config("lab", "a: &a {b: *a}\n"), names=("c.yaml", "alias")),
    Case(
        "--config .yml recursive alias",
        "yaml",
        config("play", f"sims: {CYCLE}\n", name="c.yml"),
        names=("c.yml", "alias"),
    ),
    Case(
        "$COLLAPSE_PROBE_CONFIG alias bomb: audit",
        "yaml",
        env_config("audit", BOMB),
        names=("c.yaml", "alias"),
        env={"COLLAPSE_PROBE_CONFIG": "c.yaml"},
    ),
    Case(
        "$COLLAPSE_PROBE_CONFIG alias bomb: crossplay",
        "yaml",
        env_config("crossplay", BOMB),
        names=("c.yaml", "alias"),
        env={"COLLAPSE_PROBE_CONFIG": "c.yaml"},
    ),
    Case(
        "$COLLAPSE_PROBE_CONFIG alias bomb: gate",
        "yaml",
        env_config("gate", BOMB, *GATE),
        names=("c.yaml", "alias"),
        env={"COLLAPSE_PROBE_CONFIG": "c.yaml"},
    ),
    Case(
        "$COLLAPSE_PROBE_CONFIG recursive alias: crossplay",
        "yaml",
        env_config("crossplay", f"sims: {CYCLE}\n"),
        names=("c.yaml", "alias"),
        env={"COLLAPSE_PROBE_CONFIG": "c.yaml"},
    ),
    Case("-M alias bomb", "yaml", args("audit", *RUN, "-M", f"sim.x={BOMB_FLOW}"), names=("-M", "alias")),
    Case("-M recursive alias", "yaml", args("audit", *RUN, "-M", f"sim.x={CYCLE}"), names=("-M", "alias")),
    Case("-M recursive mapping alias", "yaml", args("crossplay", "-M", "x=&a {b: *a}"), names=("-M", "alias")),
    Case(
        "-M in a config file: alias bomb",
        "yaml",
        config("audit", f"model-arg: ['sim.x={BOMB_FLOW}']\n"),
        names=("model-arg", "alias"),
    ),
    # ---- integers past an option's range
    Case("lab --steps 10^30", "range", args("lab", "--steps", "9" * 30, "--out", "o"), names=("--steps",)),
    Case(
        "audit --variance-agents 10^9",
        "range",
        args("audit", *RUN, "--variance-agents", "1000000000"),
        names=("--variance-agents",),
    ),
    Case(
        "audit --variance-sims 10^9",
        "range",
        args("audit", *RUN, "--variance-sims", "1000000000"),
        names=("--variance-sims",),
    ),
    Case(
        "audit --variance-agents 1e9",
        "range",
        args("audit", *RUN, "--variance-agents", "1e9"),
        names=("--variance-agents",),
    ),
    Case(
        "-M sim.concurrency=10^9 openai-compatible",
        "range",
        args(
            "audit",
            "--sim",
            "openai-compatible/m@http://127.0.0.1:9/v1",
            "--out",
            "o",
            "-M",
            "sim.concurrency=1000000000",
        ),
        names=("concurrency",),
    ),
    # ---- structured values nested deeply, or too long
    Case(
        "$COLLAPSE_PROBE_SIMS 5000 deep: crossplay --help",
        "nesting",
        args("crossplay", "--help"),
        expect="accept",
        env={"COLLAPSE_PROBE_SIMS": deep(5000)},
    ),
    Case(
        "$COLLAPSE_PROBE_SIMS 5000 deep: crossplay",
        "nesting",
        args("crossplay", "--policies", "scripted:s.json", "--out", "o"),
        names=("COLLAPSE_PROBE_SIMS",),
        env={"COLLAPSE_PROBE_SIMS": deep(5000)},
    ),
    Case("--sims 5000 deep", "nesting", args("crossplay", "--sims", deep(5000), "--out", "o"), names=("--sims",)),
    Case(
        "--policies 5000 deep",
        "nesting",
        args("crossplay", "--policies", deep(5000), "--out", "o"),
        names=("--policies",),
    ),
    Case("-M value 3000 deep", "nesting", args("audit", *RUN, "-M", f"sim.x={deep(3000)}"), names=("-M",)),
    Case(
        "-M sim.delay_s 5000 digits",
        "nesting",
        args("audit", *RUN, "-M", "sim.delay_s=" + "1" * 5000),
        names=("delay_s",),
    ),
    Case("-M sim.dtype=[int8]", "backend", args("audit", "--out", "o", "-M", "sim.dtype=[int8]"), names=("dtype",)),
    Case("-M sim.device=tpu", "backend", args("audit", "--out", "o", "-M", "sim.device=tpu"), names=("device",)),
    # ---- a NUL byte in a YAML string
    Case("--config sim with a NUL", "nul", config("audit", 'sim: "a\\0b"\n'), names=("c.yaml", "sim")),
    Case("--config out with a NUL", "nul", config("audit", 'out: "o\\0x"\n'), names=("c.yaml", "out")),
    Case(
        "--config personas with a NUL", "nul", config("audit", 'personas: "p\\0.jsonl"\n'), names=("c.yaml", "personas")
    ),
    Case(
        "--config price-table with a NUL",
        "nul",
        config("audit", 'price-table: "p\\0.toml"\n'),
        names=("c.yaml", "price-table"),
    ),
    # ---- abbreviated flags
    Case("audit --sample 5", "abbrev", args("audit", "--sample", "5", *RUN), names=("--sample",)),
    # ---- more of the same kinds: other commands, flags, nestings and sources (env vs config vs -M)
    Case("--config recursive alias: train", "yaml", config("train", f"sims: {CYCLE}\n"), names=("c.yaml", "alias")),
    Case(
        "--config alias bomb under model-arg",
        "yaml",
        config("play", f"model-arg: {{sim: {{x: {BOMB_FLOW}}}}}\n"),
        names=("c.yaml", "alias"),
    ),
    Case(
        "-M policy alias cycle: play",
        "yaml",
        args("play", "--sim", "scripted:s.json", "-M", f"policy.x={CYCLE}"),
        names=("-M", "alias"),
    ),
    Case(
        "$COLLAPSE_PROBE_STEPS 10^30: lab",
        "range",
        args("lab", "--out", "o"),
        names=("COLLAPSE_PROBE_STEPS",),
        env={"COLLAPSE_PROBE_STEPS": "1" + "0" * 30},
    ),
    Case(
        "--config steps 10^30: lab",
        "range",
        config("lab", "steps: 1" + "0" * 30 + "\n", "--out", "o"),
        names=("--steps",),
    ),
    Case(
        "--config n-boot 10^12: audit",
        "range",
        config("audit", "n-boot: 1000000000000\nsim: scripted:s.json\n", "--out", "o"),
        names=("--n-boot",),
    ),
    Case(
        "--config model-arg concurrency 10^9",
        "range",
        config(
            "audit",
            "sim: openai-compatible/m@http://127.0.0.1:9/v1\nmodel-arg: {sim: {concurrency: 1000000000}}\n",
            "--out",
            "o",
        ),
        names=("concurrency",),
    ),
    Case(
        "-M sim.timeout=1e300",
        "range",
        args("audit", "--sim", "openai-compatible/m@http://127.0.0.1:9/v1", "--out", "o", "-M", "sim.timeout=1e300"),
        names=("timeout",),
    ),
    Case("-M sim.delay_s=1e9 scripted", "range", args("audit", *RUN, "-M", "sim.delay_s=1e9"), names=("delay_s",)),
    Case(
        "-M sim.max_batch=10^9 local",
        "range",
        args("audit", "--out", "o", "-M", "sim.max_batch=1000000000"),
        names=("max_batch",),
    ),
    Case(
        "play --vs-k 10^6",
        "range",
        args("play", "--sim", "vs:scripted:s.json", "--vs-k", "1000000", "--out", "o"),
        names=("--vs-k",),
    ),
    Case(
        "lab --compare --seeds 10^9",
        "range",
        args("lab", "--compare", "--seeds", "1000000000", "--out", "o"),
        names=("--seeds",),
    ),
    Case(
        "--replicas of 5000 digits",
        "range",
        args("audit", *RUN, "--ray-address", "local", "--replicas", "1" + "0" * 5000),
        names=("--replicas",),
    ),
    Case(
        "$COLLAPSE_PROBE_POLICIES 5000 deep: crossplay",
        "nesting",
        args("crossplay", "--sims", "scripted:s.json", "--out", "o"),
        names=("COLLAPSE_PROBE_POLICIES",),
        env={"COLLAPSE_PROBE_POLICIES": deep(5000)},
    ),
    Case(
        "--sims JSON with a 200-digit integer",
        "nesting",
        args("crossplay", "--policies", "scripted:s.json", "--sims", "[1" + "0" * 200 + "]", "--out", "o"),
        names=("--sims", "digits"),
    ),
    Case(
        "--config sims nested 5000 deep",
        "nesting",
        config("crossplay", "sims: " + deep(5000) + "\n"),
        names=("c.yaml", "nested"),
    ),
    Case(
        "-M mapping nested 3000 deep",
        "nesting",
        args("audit", *RUN, "-M", "sim.x=" + "{a: " * 3000 + "1" + "}" * 3000),
        names=("-M", "nested"),
    ),
    Case(
        "--config TOML sim with a NUL",
        "nul",
        config("audit", 'sim = "a\\u0000b"\n', name="c.toml"),
        names=("c.toml", "sim"),
    ),
    Case("--config judge with a NUL", "nul", config("audit", 'judge: "j\\0"\n'), names=("c.yaml", "judge")),
    Case("-M value with a NUL", "nul", args("audit", *RUN, "-M", 'sim.x="a\\0b"'), names=("-M", "NUL")),
    Case(
        "$COLLAPSE_PROBE_TORCH_THREADS of 50 digits",
        "range",
        args("audit", "--out", "o", "--states", "1", "--samples", "2", "--no-progress"),
        names=("COLLAPSE_PROBE_TORCH_THREADS",),
        env={"COLLAPSE_PROBE_TORCH_THREADS": "9" * 50},
    ),
    Case(
        "scripted file delay_s 1e9",
        "range",
        config("audit", "sim: scripted:slow.json\nout: o\n", name="c.yaml", files={"slow.json": SLOW}),
        names=("slow.json", "delay_s"),
    ),
    Case(
        "gate --min-trans 0.5",
        "abbrev",
        args("gate", "runs/none", "--policy", "p", "--min-trans", "0.5"),
        names=("--min-trans",),
    ),
    Case("lab --step 5", "abbrev", args("lab", "--step", "5", "--out", "o"), names=("--step",)),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.family}: {c.name}" for c in CASES])
def test_hostile_config_input_is_refused_in_one_line(case):
    case.timeout = LIMIT
    outcome, detail = run_case(case, REPO)
    assert outcome == "clean", f"{outcome}: {detail}"


if __name__ == "__main__":
    k = sys.argv[1] if len(sys.argv) > 1 else ""
    for case in CASES:
        if k in case.name or k == case.family:
            case.timeout = float(sys.argv[2]) if len(sys.argv) > 2 else LIMIT
            outcome, detail = run_case(case, REPO)
            print(f"{outcome:13} {case.family:8} {case.name}: {detail}", flush=True)
