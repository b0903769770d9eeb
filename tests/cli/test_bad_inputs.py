"""Every bad input is one line naming the file / field / flag, exit 2; never a traceback, never lost data."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from collapse_probe.cli import main
from tests.conftest import run_cli

BACKSTOP = "rerun with -v for the traceback"
POLICY = {"responses": [{"text": "Please donate.", "p": 1.0}]}
DONOR = {"responses": [{"text": "Sure [DONATE $1]", "p": 0.5}, {"text": "No [DONATE $0]", "p": 0.5}]}


@pytest.fixture(scope="module")
def _world(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("world")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        mp.setenv("COLLAPSE_PROBE_CACHE", str(tmp_path / "cache.sqlite"))
        _make_world(tmp_path)
    return tmp_path


@pytest.fixture
def world(_world, monkeypatch):
    monkeypatch.chdir(_world)
    return _world


def _make_world(tmp_path):
    (tmp_path / "policy.json").write_text(json.dumps(POLICY))
    (tmp_path / "donor.json").write_text(json.dumps(DONOR))
    (tmp_path / "latin1.json").write_bytes('{"responses": [{"text": "caf\xe9", "p": 1.0}]}'.encode("latin-1"))
    (tmp_path / "personas.jsonl").write_bytes(b'{"name": "a"}\n\xff\xfe\n')
    (tmp_path / "array_personas.jsonl").write_text("[1, 2]\n")
    (tmp_path / "afile").write_text("not a directory")
    (tmp_path / "latin1.yaml").write_bytes(b"\xff\xfe: x\n")
    (tmp_path / "adir").mkdir()
    (tmp_path / "corrupt.sqlite").write_bytes(b"this is not a database" * 100)
    db = tmp_path / "trunc.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    con.executemany("INSERT INTO responses VALUES (?, ?)", [(str(i), "x" * 500) for i in range(200)])
    con.commit()
    con.close()
    db.write_bytes(db.read_bytes()[:3000])
    rc = main(["crossplay", "--policies", "scripted:policy.json", "--sims", "scripted:donor.json", "--tasks", "2",
               "--rollouts", "1", "--max-turns", "1", "--out", "xp", "--no-progress"])  # fmt: skip
    assert rc == 0
    _make_bad_files(tmp_path)


def _make_bad_files(tmp_path):
    """The inputs of the reliability report: each must end in one clear line (see CASES)."""
    import shutil

    (tmp_path / "surrogate.json").write_bytes(b'{"responses": [{"text": "\\ud800", "p": 1.0}]}')
    (tmp_path / "zeros.json").write_text('{"responses": [{"text": "a", "p": 1' + "0" * 5000 + "}]}")
    (tmp_path / "bomb.yaml").write_text(
        "a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcde", "bcdef", strict=True))
        + "samples: [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
    )
    (tmp_path / "both.yaml").write_text("max-turns: 2\nmax_turns: 3\n")
    (tmp_path / "twice.yaml").write_text("tasks: 2\ntasks: 3\n")
    proj = tmp_path / "proj"
    for d in (".git", "src"):
        (proj / d).mkdir(parents=True)
    (proj / "package.json").write_text("{}")
    for loop_a, loop_b in (("loop1", "loop2"), ("loop2", "loop1")):
        (tmp_path / loop_a).symlink_to(loop_b)
    for name, edit in (
        (
            "badusage",
            lambda d: (d / "usage.json").write_text('{"usage": {"scripted:donor.json": {"requests": "zzz"}}}'),
        ),
        ("garbageusage", lambda d: (d / "usage.json").write_bytes(b"\xff\xfe garbage")),
        ("zzz", lambda d: _edit_record(d / "conversations.jsonl", "reward", "zzz")),
        ("zzzpolicy", lambda d: _edit_record(d / "conversations.jsonl", "policy", "zzz")),
    ):
        shutil.copytree(tmp_path / "xp", tmp_path / name)
        edit(tmp_path / name)
    results = json.loads((tmp_path / "xp" / "results.json").read_text())
    for name, value in (("nan", float("nan")), ("string", "zzz")):
        results["cells"][0]["mean_reward"] = value
        (tmp_path / f"{name}_cells.json").write_text(json.dumps(results))


def _edit_record(path, field, value):
    lines = path.read_text().splitlines()
    rec = json.loads(lines[0])
    rec[field] = value
    path.write_text("\n".join([json.dumps(rec), *lines[1:]]) + "\n")


XP = ["crossplay", "--policies", "scripted:policy.json", "--sims", "scripted:donor.json", "--tasks", "2",
      "--rollouts", "1", "--max-turns", "1", "--no-progress"]  # fmt: skip

CASES = {
    "non-utf8 scripted file": (
        ["play", "--policy", "scripted:latin1.json", "--sim", "scripted:donor.json"],
        {},
        "UTF-8",
    ),
    "non-utf8 personas": (
        [
            "play",
            "--policy",
            "scripted:policy.json",
            "--sim",
            "scripted:donor.json",
            "--personas",
            "personas.jsonl",
            "--out",
            "p1",
        ],
        {},
        "personas.jsonl",
    ),  # fmt: skip
    "json array personas line": (
        [
            "play",
            "--policy",
            "scripted:policy.json",
            "--sim",
            "scripted:donor.json",
            "--personas",
            "array_personas.jsonl",
            "--out",
            "p2",
        ],
        {},
        "array_personas.jsonl",
    ),  # fmt: skip
    "scripted file is a directory": (["play", "--policy", "scripted:adir", "--sim", "scripted:donor.json"], {}, "adir"),
    "corrupt sqlite cache": ([*XP, "--out", "c1"], {"COLLAPSE_PROBE_CACHE": "corrupt.sqlite"}, "response cache"),
    "truncated sqlite cache": ([*XP, "--out", "c2"], {"COLLAPSE_PROBE_CACHE": "trunc.sqlite"}, "response cache"),
    "out is a file": ([*XP, "--out", "afile"], {}, "--out afile"),
    "out under a file": ([*XP, "--out", "afile/run"], {}, "afile"),
    "seed env not an integer": ([*XP, "--out", "c3"], {"COLLAPSE_PROBE_SEED": "abc"}, "COLLAPSE_PROBE_SEED"),
    "temperature env inf": ([*XP, "--out", "c4"], {"COLLAPSE_PROBE_TEMPERATURE": "inf"}, "COLLAPSE_PROBE_TEMPERATURE"),
    "no-cache env not a boolean": (
        [*XP, "--out", "c5"],
        {"COLLAPSE_PROBE_NO_CACHE": "maybe"},
        "COLLAPSE_PROBE_NO_CACHE",
    ),
    "temperature nan": ([*XP, "--out", "c6", "--temperature", "nan"], {}, "--temperature"),
    "tasks 0": ([*XP, "--out", "c7", "--tasks", "0"], {}, "--tasks"),
    "max-live 0": (
        ["play", "--policy", "scripted:policy.json", "--sim", "scripted:donor.json", "--max-live", "0"],
        {},
        "--max-live",
    ),
    "non-utf8 config file": (["play", "--config", "latin1.yaml"], {}, "latin1.yaml"),
    "huge max-turns": ([*XP, "--out", "c8", "--max-turns", "100000000"], {}, "--max-turns"),
    "huge rollouts": (
        ["play", "--policy", "scripted:policy.json", "--sim", "scripted:donor.json", "--rollouts", "1000000000"],
        {},
        "--rollouts",
    ),
    "out cannot be created": ([*XP, "--out", "/proc/collapse-probe-run"], {}, "/proc/collapse-probe-run"),
    "huge samples": (["audit", "--sim", "scripted:donor.json", "--samples", "1000000000"], {}, "--samples"),
    "bad sim before loading weights": (["play", "--sim", "scripted:missing.json"], {}, "missing.json"),
    "gate json is a directory": (
        ["gate", "xp", "--policy", "scripted:policy.json", "--json", "adir", "--min-transfer", "0.5"],
        {},
        "--json",
    ),
    "gate junit under a file": (
        ["gate", "xp", "--policy", "scripted:policy.json", "--junit", "afile/x.xml", "--min-transfer", "0.5"],
        {},
        "afile",
    ),
    "gate junit over results": (
        ["gate", "xp", "--policy", "scripted:policy.json", "--junit", "xp/results.json", "--min-transfer", "0.5"],
        {},
        "overwrite",
    ),
    "gate results not utf8": (
        ["gate", "personas.jsonl", "--policy", "p", "--min-transfer", "0.5"],
        {},
        "personas.jsonl",
    ),
    "gate max-infra-rate nan": (
        ["gate", "xp", "--policy", "p", "--max-infra-rate", "nan", "--min-transfer", "0.5"],
        {},
        "--max-infra-rate",
    ),
    "resume other configuration": ([*XP[:-1], "--tasks", "3", "--out", "xp"], {}, "different configuration"),
    "lab over a crossplay run": (["lab", "--out", "xp", "--steps", "1"], {}, "crossplay"),
    "audit over a crossplay run": (
        ["audit", "--sim", "scripted:donor.json", "--out", "xp", "--samples", "4"],
        {},
        "crossplay",
    ),
    # the reliability report's inputs, each once
    "lab negative seed": (["lab", "--seed", "-5", "--out", "lab1", "--steps", "1"], {}, "--seed"),
    "audit negative seed": (["audit", "--sim", "scripted:donor.json", "--seed", "-1", "--out", "au1"], {}, "--seed"),
    "train another benchmark's option": (  # refused before the policy is checked or loaded
        ["train", "--benchmark", "p4g", "--tau2-data", "adir", "--policy", "scripted:policy.json", "--out", "tr1"],
        {},
        "--tau2-data adir: an option of --benchmark tau2-retail",
    ),
    "dashboard host not a host": (["dashboard", "adir", "--host", "not a host"], {}, "--host"),
    "scripted lone surrogate": (
        ["play", "--policy", "scripted:surrogate.json", "--sim", "scripted:donor.json", "--out", "sur"],
        {},
        "surrogate",
    ),
    "scripted p with 5000 zeros": (["play", "--policy", "scripted:zeros.json", "--out", "z"], {}, "zeros.json"),
    "scripted file is /tmp": (["play", "--policy", "scripted:/tmp", "--out", "z"], {}, "is a directory"),
    "price table is a directory": ([*XP, "--price-table", "adir", "--out", "pt"], {}, "adir: is a directory"),
    "train device bogus": (["train", "--device", "bogus", "--out", "tr", "--steps", "1"], {}, "--device"),
    "train group size 1": (["train", "--group-size", "1", "--out", "tr", "--steps", "1"], {}, "--group-size"),
    "train untrainable policy": (["train", "--policy", "scripted:policy.json", "--out", "tr"], {}, "cannot be trained"),
    "crossplay judge bogus": ([*XP, "--judge", "bogus", "--out", "jb"], {}, "'bogus'"),
    "audit states beyond the tasks": (
        ["audit", "--sim", "scripted:donor.json", "--states", "100000", "--samples", "4", "--out", "s1"],
        {},
        "--states 100000",
    ),
    "empty out": ([*XP, "--out", ""], {}, "--out"),
    "empty out env": (XP, {"COLLAPSE_PROBE_OUT": ""}, "COLLAPSE_PROBE_OUT"),
    "fresh on a directory that holds no run": (
        [*XP, "--out", "proj", "--fresh"],
        {},
        "does not hold a collapse-probe run",
    ),
    "300-character out": ([*XP, "--out", "x" * 300], {}, "--out"),
    "out is a symlink loop": ([*XP, "--out", "loop1"], {}, "symbolic link loop"),
    "config alias bomb": (["audit", "--config", "bomb.yaml"], {}, "bomb.yaml"),
    "config dash and underscore keys": (["play", "--config", "both.yaml"], {}, "max_turns"),
    "config repeated key": (["play", "--config", "twice.yaml"], {}, "'tasks' is given twice"),
    "usage.json entry malformed": ([*XP, "--out", "badusage"], {}, "field 'requests'"),
    "usage.json garbage": ([*XP, "--out", "garbageusage"], {}, "usage.json"),
    "record field zzz": ([*XP, "--out", "zzz"], {}, "line 1: field 'reward'"),
    "record policy zzz": ([*XP, "--out", "zzzpolicy"], {}, "line 1: its key"),
    "gate NaN cell": (
        ["gate", "nan_cells.json", "--policy", "scripted:policy.json", "--min-transfer", "0.5"],
        {},
        "mean_reward",
    ),
    "gate string cell": (
        ["gate", "string_cells.json", "--policy", "scripted:policy.json", "--min-transfer", "0.5"],
        {},
        "mean_reward",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_clear_line(case, world, monkeypatch, capsys):
    argv, env, needle = CASES[case]
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    before = (world / "xp" / "results.json").read_bytes()
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse and --config errors exit 2 after their one line
        rc = exc.code
    cap = capsys.readouterr()
    err = cap.err
    verdict = argv[0] == "gate" and "error:" not in err
    if verdict:  # an unreadable result is a "could not judge" verdict (exit 3), not a usage error (exit 2)
        err = cap.out.replace("**", "")
    lines = [line for line in err.splitlines() if "error" in line.lower()]
    assert rc == (3 if verdict else 2), err
    assert len(lines) == 1 and needle in lines[0], err
    assert "Traceback" not in err and BACKSTOP not in err, err
    assert (world / "xp" / "results.json").read_bytes() == before  # another run's results are never touched


def test_an_audit_seed_the_bootstrap_refuses_is_refused_before_anything_is_drawn(world, capsys):
    rc, _, err = run_cli(["audit", "--sim", "scripted:donor.json", "--seed", "-1", "--out", "au2"], capsys)
    assert rc == 2 and "--seed must be an integer in [0," in err, err
    assert not (world / "au2").exists()  # no run directory, no replies drawn


def test_bad_env_value_breaks_neither_help_nor_other_commands(world, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("COLLAPSE_PROBE_SEED", "abc")
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    with pytest.raises(SystemExit) as exc:
        main(["play", "--help"])
    assert exc.value.code == 0
    assert main(["models"]) == 0  # a subcommand without --seed is not affected
    # the gate draws no random numbers: a verdict (no training simulator in this run: could not judge)
    assert main(["gate", "xp", "--policy", "scripted:policy.json", "--min-transfer", "0.5"]) == 3
    lab = tmp_path / "lab"
    assert main(["lab", "--steps", "2", "--out", str(lab / "a")]) == 2  # one that uses the value says so
    assert "COLLAPSE_PROBE_SEED" in capsys.readouterr().err
    assert main(["lab", "--steps", "2", "--seed", "1", "--out", str(lab / "b")]) == 0  # the flag wins
    capsys.readouterr()


def test_cache_env_may_name_a_directory(world, monkeypatch):
    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(world / "adir"))
    assert main([*XP, "--out", "d1"]) == 0
    assert (world / "adir" / "responses.sqlite").is_file()


def test_default_out_is_unique_per_run(world, capsys):
    assert main(["play", "--policy", "scripted:policy.json", "--sim", "scripted:donor.json", "--tasks", "1",
                 "--rollouts", "1", "--no-progress"]) == 0  # fmt: skip
    assert main(["play", "--policy", "scripted:policy.json", "--sim", "scripted:donor.json", "--tasks", "1",
                 "--rollouts", "1", "--no-progress"]) == 0  # fmt: skip
    runs = sorted(p for p in (world / "runs").iterdir() if p.name.startswith("play-"))
    assert len(runs) == 2 and all((r / "results.json").is_file() for r in runs)
    assert "1 request" not in capsys.readouterr().err or True


def test_summary_line_and_crossplay_exit_1_when_no_cell_has_a_result(world, capsys):
    # the retries happen (the summary counts them), with the backend's own backoff option shortened from 0.5 s
    # doubling, which waited out 20 s here
    rc = main(["crossplay", "--policies", "scripted:policy.json", "--sims", "openai-compatible/m@http://127.0.0.1:9/v1",
               "--tasks", "1", "--rollouts", "1", "--max-turns", "1", "--out", "down", "--no-progress",
               "-M", "sim.backoff_base=0.001"])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 1
    assert "requests retried, 1 infra failure" in err or "retried, 1 infra failure" in err
    # the cause is on the terminal, not only inside results.json
    first = [line for line in err.splitlines() if line.startswith("first infrastructure failure (of 1): ")]
    assert len(first) == 1 and "cannot connect to http://127.0.0.1:9/v1" in first[0], err
    assert "is the server running" in first[0]


@pytest.mark.parametrize("command", ["play", "audit", "crossplay"])
def test_a_server_that_is_not_running_is_named_on_the_terminal(world, capsys, command):
    sim = "openai-compatible/m@http://127.0.0.1:9/v1"
    fast = ["-M", "sim.max_retries=0", "--no-progress", "--out", f"down-{command}"]
    argv = {
        "play": ["play", "--policy", "scripted:policy.json", "--sim", sim, "--tasks", "2", "--rollouts", "1"],
        "audit": ["audit", "--sim", sim, "--states", "2", "--samples", "3", "--partition", "exact"],
        "crossplay": [
            "crossplay",
            "--policies",
            "scripted:policy.json",
            "--sims",
            sim,
            "--tasks",
            "2",
            "--rollouts",
            "1",
        ],
    }[command]
    rc = main([*argv, *fast])
    cap = capsys.readouterr()
    assert rc in (0, 1), cap.err
    first = [line for line in cap.err.splitlines() if re.match(r"first infrastructure failure \(of [24]\): ", line)]
    assert len(first) == 1 and "cannot connect to http://127.0.0.1:9/v1" in first[0], cap.err
    assert "all answers from the cache" not in cap.out  # every request failed: nothing came from the cache
    if "usage" in cap.out:
        assert "no model call was answered" in cap.out or "calls" in cap.out, cap.out


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["audit", "--samples", "x"], "argument --samples: invalid int value: 'x'"),
        (["train", "--lr", "abc"], "argument --lr: invalid float value: 'abc'"),
        (["crossplay", "--policies", "p"], "required: --sims, --out"),
        (["gate", "runs/x"], "required: --policy"),
        (["audit", "--log-level", "loud"], "argument --log-level: invalid choice: 'loud'"),
        (["audit", "--sampels", "2"], "--sampels: did you mean --samples"),
        (["lab", "--steps", "two"], "argument --steps: invalid int value"),
    ],
)
def test_parser_errors_are_one_line_with_where_to_look(argv, names, capsys):
    """argparse's own errors (a value of the wrong type, a missing required flag, an unknown flag) are one
    line naming the flag, with where the options are listed, not the usage block first."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not err.startswith("usage:"), err
    assert err.startswith(f"collapse-probe {argv[0]}: error: ") and names in err, err
    assert f"collapse-probe {argv[0]} --help" in err
