"""Conversation records, where the engine's users have always imported them from: the status
values and record checks live in :mod:`collapse_probe._records`, at the bottom of the package, so
that metrics and model backends read records without importing the rollout engine."""

from collapse_probe._records import (
    INFRA_ERROR,
    conversation_problem,
    field_problem,
    record_fingerprints,
)

__all__ = ["INFRA_ERROR", "conversation_problem", "field_problem", "record_fingerprints"]
