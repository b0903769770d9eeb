"""Participants of a run by role: their specs checked before any model loads, their models built
once with the backend options each role gives (``-M ROLE.key=value`` on the command line)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from collapse_probe.errors import ConfigError
from collapse_probe.models import get_model, resolve_spec
from collapse_probe.models._registry import use_options
from collapse_probe.simulators._participant import Participant, make_participant, parse_participant_spec
from collapse_probe.simulators.verbalized import check_vs_k


def make_participants(specs: Iterable[str], *, vs_k: int = 5, cache: bool = True) -> dict[str, Participant]:
    """Label -> participant for each spec (models load once and are shared); every spec is checked
    (:func:`check_specs`) before any model loads."""
    specs = list(dict.fromkeys(specs))
    check_vs_k(vs_k)
    check_specs(specs)
    return {s: make_participant(s, vs_k=vs_k, cache=cache) for s in specs}


def check_specs(specs: Iterable[str]) -> None:
    """Validate participant specs (prefix, scripted files, hf directories) before loading any model."""
    for s in specs:
        check_spec_cheaply(resolve_spec(parse_participant_spec(s)[1]))


def check_spec_cheaply(spec: str) -> None:
    """The checks of a model spec that cost nothing: a scripted file parses, an ``hf/`` path is a
    model directory. Run before any weights load, so a typo fails in a second, not after a minute."""
    if spec.startswith("scripted:"):
        from collapse_probe.models.scripted import load_scripted

        load_scripted(spec[len("scripted:") :])
    elif spec.startswith("hf/"):
        path = Path(spec[len("hf/") :])
        if not (path / "config.json").is_file():
            raise ConfigError(
                f"model spec {spec!r}: expected a local transformers model directory containing config.json, "
                f"but {str(path)!r} {'has no config.json' if path.is_dir() else 'does not exist'}"
            )


def load_role_models(roles: Mapping[str, list[str]], options: Mapping[str, Mapping[str, object]]) -> None:
    """Construct the models of each role (``policy``, ``sim``, ``judge``: participant specs) with the
    backend options ``options`` gives that role (``"*"``: every model), as ``-M ROLE.key=value`` does.

    Models are built once per process (see :func:`~collapse_probe.models.get_model`), so participants
    made afterwards from the same specs use these instances. Without options nothing is loaded here
    (and this run's models take their defaults, whatever an earlier run in the process gave).

    Raises:
        ConfigError: ``-M`` names a role this command has no model for, or gives one model two
            different values of one option through two roles (options of different roles that a
            model plays are merged: it is one backend instance).
    """
    parsed = dict(options)
    if not parsed:  # this run's models take their defaults, whatever an earlier run in the process gave
        for specs in roles.values():
            for spec in specs:
                use_options(resolve_spec(parse_participant_spec(spec)[1]), {})
        return
    for role in parsed:
        if role != "*" and not roles.get(role):
            raise ConfigError(
                f"-M/--model-arg: this run has no {role!r} model (roles here: {', '.join(r for r in roles if roles[r])})"
            )
    # one model is one backend instance, whatever roles it plays: the options its roles give are
    # merged, and only two different values for the same option conflict
    wanted: dict[str, dict[str, object]] = {}
    given_by: dict[tuple[str, str], str] = {}
    for role, specs in roles.items():
        role_options: dict[str, object] = {**parsed.get("*", {}), **parsed.get(role, {})}
        for spec in specs:
            model = resolve_spec(parse_participant_spec(spec)[1])
            merged = wanted.setdefault(model, {})
            for key, value in role_options.items():
                if key in merged and merged[key] != value:
                    raise ConfigError(
                        f"-M/--model-arg: model {model!r} plays the {given_by[(model, key)]} and {role} roles with "
                        f"different values of {key} ({merged[key]!r} vs {value!r}); one model has one value: give "
                        f"{key}={value} without a role, or use two models"
                    )
                merged[key] = value
                given_by.setdefault((model, key), role)
    for model, merged_options in wanted.items():
        use_options(model, merged_options)
        try:
            get_model(model, **merged_options)
        except ConfigError as exc:  # a backend refusing an option: say where the option came from
            if merged_options and not str(exc).startswith("-M"):
                named = str(exc).startswith(model)  # the backend's message names the model already
                raise ConfigError(f"-M/--model-arg{'' if named else f' for {model}'}: {exc}") from None
            raise
