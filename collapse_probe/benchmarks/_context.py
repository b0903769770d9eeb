"""What a benchmark's ``build`` may use besides its options (no pydantic here: cheap to import)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class BuildContext:
    """What a benchmark's ``build`` may use besides its options."""

    participants: tuple[str, ...] = ()
    """The run's participant specs (``vs:`` prefix allowed)."""
    cache: bool = True
    """Serve a judge model through the response cache."""
    judge_model: Any = None
    """An already built judge model (``None``: build one from the options, if they name one)."""

    def any_local(self) -> bool:
        """Whether any participant is a small in-process model (compact prompts then)."""
        return any(is_local(s) for s in self.participants)

    def judge(self, spec: str | None) -> Any:
        """The judge model: :attr:`judge_model`, else built from ``spec`` (``None`` when neither)."""
        if self.judge_model is not None or not spec:
            return self.judge_model
        from collapse_probe.simulators import make_participant

        return make_participant(spec, cache=self.cache).model


LOCAL_PREFIXES = ("local/", "hf/", "scripted:")
"""Model specs (after alias expansion) that run in-process with a small context."""


def is_local(spec: str) -> bool:
    """Whether a participant spec (``vs:`` prefix allowed) names a small in-process model."""
    from collapse_probe.models import resolve_spec
    from collapse_probe.simulators import parse_participant_spec

    return resolve_spec(parse_participant_spec(spec)[1]).startswith(LOCAL_PREFIXES)
