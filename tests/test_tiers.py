"""The test tiers: the default one runs on tiny and scripted models, the real models have a tier of their own
that CI runs (``-m realmodel``), and a default-tier test that loads a real model fails, naming it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tomllib

from collapse_probe.models import _encoder, local

REPO = Path(__file__).resolve().parents[1]


def test_a_default_tier_test_that_loads_a_real_model_fails_naming_it(tmp_path):
    with pytest.raises(pytest.fail.Exception, match=r"loads the embedded model local/smollm2-135m: .*realmodel"):
        local._load_dir(tmp_path, "cpu", None, "local/smollm2-135m")
    with pytest.raises(pytest.fail.Exception, match=r"test_tiers\.py::\S+ loads the sentence encoder .*realmodel"):
        _encoder._default_model_path()


@pytest.fixture(scope="module")
def loaded_by_a_module_fixture(tmp_path_factory):
    """A module-scoped fixture is set up before the test's own function fixtures: the guard must be on already."""
    try:
        local._load_dir(tmp_path_factory.mktemp("model"), "cpu", None, "local/smollm2-135m")
    except pytest.fail.Exception as exc:
        return str(exc)
    except Exception as exc:  # the real loader ran (and found no model in the empty directory)
        return f"not guarded: {exc!r}"
    return "not guarded: it loaded"


def test_a_module_scoped_fixture_that_loads_a_real_model_fails_too(loaded_by_a_module_fixture):
    assert re.match(
        r"tests/test_tiers\.py::test_a_module_scoped_fixture_that_loads_a_real_model_fails_too loads the embedded "
        r"model local/smollm2-135m: .*realmodel",
        loaded_by_a_module_fixture,
    ), loaded_by_a_module_fixture


@pytest.mark.realmodel
def test_the_real_model_tier_loads_them():
    assert local._load_dir.__name__ == "_load_dir" and _encoder._default_model_path.__name__ == "_default_model_path"


def test_the_default_tier_leaves_the_real_models_out_and_ci_runs_them():
    pytest_options = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "not realmodel" in pytest_options["addopts"]
    assert any(m.startswith("realmodel:") for m in pytest_options["markers"])
    ci = (REPO / ".ci" / "run").read_text()
    assert re.search(r"^python -m pytest -q -n 0 -m realmodel$", ci, re.M), ".ci/run does not run the real-model tier"


def test_the_mypy_checks_of_a_users_script_are_a_tier_ci_runs():
    pytest_options = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "not typecheck" in pytest_options["addopts"]
    assert any(m.startswith("typecheck:") for m in pytest_options["markers"])
    ci = (REPO / ".ci" / "run").read_text()
    assert re.search(r"^python -m pytest -q -n 0 -m typecheck tests/test_public_types\.py$", ci, re.M)


def test_the_default_tier_runs_on_two_processes_and_ci_runs_the_others_on_one():
    addopts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert re.search(r"(^| )-n 2 --dist loadfile( |$)", addopts), (
        "the default tier is not spread over 2 processes by file"
    )
    ci = (REPO / ".ci" / "run").read_text()
    assert re.search(r"^python -m pytest -q$", ci, re.M), ".ci/run does not run the README's test command"
    others = re.findall(r"^(?:[A-Z_]+=\S+ )?python -m pytest -q (.+)$", ci, re.M)
    assert len(others) >= 5 and all(o.startswith("-n 0 ") for o in others), others


class _Item:
    """What the guard reads of a test item: its node id and its markers."""

    def __init__(self, *markers: str) -> None:
        self.nodeid = f"tests/x.py::test_{'_'.join(markers) or 'plain'}"
        self.markers = markers

    def get_closest_marker(self, name: str):
        return getattr(pytest.mark, name).mark if name in self.markers else None


@pytest.mark.parametrize(("markers", "guarded"), [((), True), (("realmodel",), False), (("browser",), False)])
def test_the_guard_is_on_for_every_test_but_the_real_model_and_browser_tiers(markers, guarded):
    from tests.conftest import pytest_runtest_setup, pytest_runtest_teardown

    before = local._load_dir
    item = _Item(*markers)
    pytest_runtest_setup(item)
    try:
        assert (local._load_dir is not before) == guarded
    finally:
        pytest_runtest_teardown(item)
    assert local._load_dir is before
