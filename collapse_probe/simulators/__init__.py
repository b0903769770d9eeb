"""Simulators: a model plus a sampling mode (direct or Verbalized Sampling)."""

from collapse_probe.simulators._participant import (
    Mode,
    Participant,
    make_participant,
    parse_participant_spec,
    vs_setting,
)

__all__ = ["Mode", "Participant", "make_participant", "parse_participant_spec", "vs_setting"]
