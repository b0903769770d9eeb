"""``trainer_state.json``'s generator state reads back as :func:`random.setstate` takes it, or as one line."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.trainers._checkpoints import _python_random


def test_the_stored_generator_state_restores_the_same_draws(tmp_path: Path) -> None:
    state = random.getstate()
    saved = [state[0], list(state[1]), state[2]]
    assert _python_random(saved, tmp_path) == state
    first = random.random()
    random.setstate(_python_random(saved, tmp_path))
    assert random.random() == first


@pytest.mark.parametrize("saved", [[3, "not a list", None], [3, [1, 2]], ["3", [1, 2], None]])
def test_a_corrupt_generator_state_is_one_line_naming_the_field(tmp_path: Path, saved: list) -> None:
    with pytest.raises(ConfigError, match=r"trainer_state.json field python_random is .*expected random.getstate\(\)"):
        _python_random(saved, tmp_path)
