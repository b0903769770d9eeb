"""The classifier comparison of the meaning partition fits its variants on the rows the shipped fit uses."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from collapse_probe.metrics._service import PAIR_WEIGHT, LabelledPair, LabelledState, _fit_lr

ROOT = Path(__file__).resolve().parents[2]


def _benchmark():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location(
        "meaning_model_variants", ROOT / "benchmarks" / "meaning_model_variants.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _state(found: list[set[str]], labels: list[int], seed: int) -> LabelledState:
    emb = np.random.default_rng(seed).normal(size=(len(found), 8))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    return LabelledState(found=[frozenset(f) for f in found], emb=emb, labels=labels, group=f"g{seed}",
                         texts=[f"reply {seed} {i}" for i in range(len(found))])  # fmt: skip


def test_rows_weigh_each_state_alike_and_balance_the_classes() -> None:
    states = [
        _state([{"id:a1"}, {"id:b2"}, {"id:a1"}], [0, 1, 0], 1),  # 3 pairs, one same-class
        _state([{"w:refund"}, {"w:refund", "w:today"}], [0, 0], 2),  # 1 pair, same class
    ]
    pairs = [LabelledPair(x=np.ones(len(_benchmark().training_rows(states, [])[0][0])), same=False, domain="d",
                          kind="contrast")]  # fmt: skip
    x, y, w = _benchmark().training_rows(states, pairs)
    assert x.shape[0] == len(y) == len(w) == 5
    # balanced as the logistic regression's class_weight="balanced" (by counts): 2 same-class rows of 5
    balance = {c: len(y) / (2 * int((y == c).sum())) for c in (False, True)}  # n / (classes x count)
    raw = w / np.array([balance[bool(v)] for v in y])
    # before balancing, each state's pairs sum to 1 and the pairs to PAIR_WEIGHT x the 2 states
    assert raw[:3].sum() == pytest.approx(1.0) and raw[3] == pytest.approx(1.0)
    assert raw[4] == pytest.approx(PAIR_WEIGHT * 2)
    _fit_lr(states, 1.0, pairs)  # the same material fits the shipped model


def test_an_unknown_variant_is_one_line_naming_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        _benchmark().main(["--variants", "lr,svm"])
    assert exc.value.code == 2
    assert "--variants: expected some of lr, gbm-2, gbm-3, forest, got 'lr,svm'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _benchmark().main(["--cuts", "0.5,1.2"])
    assert "--cuts: every cut must lie in (0, 1)" in capsys.readouterr().err
