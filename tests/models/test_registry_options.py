""":func:`get_model` is keyed on spec and options: other options are another backend, never ignored."""

from __future__ import annotations

from collapse_probe.models import get_model

SPEC = "openai-compatible/m@http://127.0.0.1:9/v1"


def test_other_options_build_another_backend_and_the_same_options_share_one(fresh_models):
    three = get_model(SPEC, concurrency=3)
    four = get_model(SPEC, concurrency=4)
    assert (three.concurrency, four.concurrency) == (3, 4)
    assert get_model(SPEC, concurrency=3) is three
    # without options: the backend this process loaded for the spec (a command's -M options)
    assert get_model(SPEC) is three


def test_without_a_loaded_backend_no_options_means_the_defaults(fresh_models):
    default = get_model(SPEC)
    assert get_model(SPEC) is default
    tuned = get_model(SPEC, concurrency=2)
    assert tuned is not default and tuned.concurrency == 2 and default.concurrency != 2


def test_the_options_a_user_sets_and_only_those_become_the_backend_keywords(fresh_models):
    from collapse_probe.models._options import LocalOptions, OpenAICompatibleOptions

    assert LocalOptions.parse({"max_batch": 3, "device": "cpu"}).model_keywords() == {"max_batch": 3}
    assert LocalOptions.parse({"tie_tolerance": 0.5}).model_keywords() == {"tie_tolerance": 0.5}
    opts = OpenAICompatibleOptions.parse({"timeout": 5, "extra_body": {"top_k": 20}, "base_url": "http://h/v1"})
    assert opts.common() == {"timeout": 5.0, "extra_body": {"top_k": 20}}
    model = get_model(SPEC, timeout=5, extra_body={"top_k": 20}, native_n=False)
    assert (model.timeout, model.extra_body, model._native_n) == (5.0, {"top_k": 20}, False)
