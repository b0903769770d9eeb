"""Simulators: a model plus a sampling mode (direct or Verbalized Sampling)."""

from collapse_probe.simulators._participant import (
    Mode,
    Participant,
    make_participant,
    parse_participant_spec,
    vs_setting,
)
from collapse_probe.simulators._roles import check_spec_cheaply, check_specs, load_role_models, make_participants

__all__ = [
    "Mode", "Participant", "check_spec_cheaply", "check_specs", "load_role_models", "make_participant",
    "make_participants", "parse_participant_spec", "vs_setting",
]  # fmt: skip
