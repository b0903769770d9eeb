"""One description of a run's benchmark arena, shared by ``play``, ``audit``, ``crossplay`` and ``train``.

:class:`ArenaSpec` holds the benchmark and its options as the user gave them; :meth:`ArenaSpec.resolve`
fills in what depends on the participants (the P4G turn default, compact τ2 prompts and the text
tool protocol when any participant is a small local model) and :meth:`ArenaSpec.build` makes the
arena. Every pipeline goes through these two calls, so a policy trained by ``train`` is rolled out
with exactly the prompts ``crossplay`` later evaluates it with, and the resolved spec is what
``config.json`` records under ``"arena"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from collapse_probe.benchmarks import Arena
from collapse_probe.limits import check_int

LOCAL_PREFIXES = ("local/", "hf/", "scripted:")
"""Model specs (after alias expansion) that run in-process with a small context: τ2 prompts are compacted."""

P4G_DEFAULT_TURNS = 3
"""P4G conversation rounds when none are given."""

_SPEC_ATTR = "_collapse_probe_arena_spec"


def arena_record(arena: Arena) -> dict[str, Any]:
    """What ``config.json`` records under ``"arena"``: the resolved :class:`ArenaSpec` the arena was built
    from, or, for an arena built by other means, its benchmark name and ``"custom": true``."""
    spec = getattr(arena, _SPEC_ATTR, None)
    if isinstance(spec, ArenaSpec):
        return spec.to_dict()
    return {"benchmark": getattr(arena, "name", type(arena).__name__), "custom": True}


def is_local(spec: str) -> bool:
    """Whether a participant spec (``vs:`` prefix allowed) names a small in-process model."""
    from collapse_probe.models import resolve_spec
    from collapse_probe.simulators import parse_participant_spec

    return resolve_spec(parse_participant_spec(spec)[1]).startswith(LOCAL_PREFIXES)


@dataclass(frozen=True)
class ArenaSpec:
    """The benchmark arena of a run.

    Args:
        benchmark: ``p4g``, ``tau2-retail``, ``tau2-airline`` or ``tau2-demo``.
        max_turns: P4G conversation rounds (default 3); τ2: optional cap on user turns.
        max_tokens: token budget of every turn, both sides (default: the arena's own).
        personas: P4G persona file (default: the shipped personas).
        tau2_data: directory with the official τ2 data.
        judge: model spec of the τ2 natural-language assertion judge.
        cooperbench_data: directory with the CooperBench data.
        partial_reward: CooperBench: 0.5 when the pair fails but the policy's own feature passes.
        cooperbench_mode: CooperBench collaboration mode (default: the arena's, ``coop``).
        compact: small-context τ2 prompts and the text tool protocol (``None``: decided by
            :meth:`resolve` from the participants).
    """

    benchmark: str = "p4g"
    max_turns: int | None = None
    max_tokens: int | None = None
    personas: str | None = None
    tau2_data: str | None = None
    judge: str | None = None
    cooperbench_data: str | None = None
    partial_reward: bool = False
    cooperbench_mode: str | None = None
    compact: bool | None = None

    @property
    def is_p4g(self) -> bool:
        return self.benchmark == "p4g"

    @property
    def is_cooperbench(self) -> bool:
        return self.benchmark.startswith("cooperbench")

    def resolve(self, participants: Sequence[str] = ()) -> ArenaSpec:
        """The spec with every participant-dependent choice made (idempotent).

        Raises:
            ConfigError: an unknown benchmark, a non-positive turn or token budget, or an unknown spec.
        """
        from collapse_probe.benchmarks import BENCHMARKS

        if self.benchmark not in BENCHMARKS:
            from collapse_probe.benchmarks import make_arena

            make_arena(self.benchmark)  # raises the registry's message with suggestions
        for name in ("max_turns", "max_tokens"):
            check_int(getattr(self, name), f"--{name.replace('_', '-')}", optional=True)
        from collapse_probe.limits import MAX_TURNS, check_at_most

        check_at_most(self.max_turns, MAX_TURNS, "--max-turns", "rounds of a conversation")
        if self.is_p4g:
            return replace(self, max_turns=self.max_turns or P4G_DEFAULT_TURNS, compact=None)
        compact = self.compact if self.compact is not None else any(is_local(s) for s in participants)
        return replace(self, compact=compact)

    def arena_options(self) -> dict[str, Any]:
        """Keyword options of :func:`~collapse_probe.benchmarks.make_arena` (without the judge model)."""
        if self.is_p4g:
            options: dict[str, Any] = {"max_turns": self.max_turns or P4G_DEFAULT_TURNS}
            if self.max_tokens is not None:
                options["max_tokens"] = self.max_tokens
            return options
        options = {"data_dir": self.tau2_data, "max_turns": self.max_turns}
        if self.compact:
            options.update(compact=True, tool_protocol="text")
        if self.is_cooperbench:
            options.update(data_dir=self.cooperbench_data, partial_reward=self.partial_reward)
            if self.cooperbench_mode is not None:
                options["mode"] = self.cooperbench_mode
            if self.max_tokens is not None:
                options["turn_max_tokens"] = self.max_tokens
        elif self.max_tokens is not None:
            options.update(policy_max_tokens=self.max_tokens, simulator_max_tokens=self.max_tokens)
        return options

    def build(self, participants: Sequence[str] = (), *, cache: bool = True, judge_model: Any = None) -> Arena:
        """Resolve against ``participants`` and build the arena.

        Args:
            participants: the run's participant specs (decide compact τ2 prompts).
            cache: serve the judge through the response cache.
            judge_model: an already built judge model (default: built from ``judge``).
        """
        from collapse_probe.benchmarks import make_arena

        spec = self.resolve(participants)
        options = spec.arena_options()
        if spec.is_p4g:
            if spec.personas:
                from collapse_probe.benchmarks.p4g import load_personas

                options["personas"] = load_personas(spec.personas)
        else:
            if judge_model is None and spec.judge:
                from collapse_probe.simulators import make_participant

                judge_model = make_participant(spec.judge, cache=cache).model
            if judge_model is not None:
                options["judge"] = judge_model
        arena = make_arena(spec.benchmark, **options)
        setattr(arena, _SPEC_ATTR, spec)
        return arena

    DATA_FILES = ("personas", "tau2_data")
    """Fields naming data the arena reads: ``config.json`` records a content fingerprint of each given
    one (``data_fingerprints``), so a run resumed after the file changed in place is refused."""

    def data_fingerprints(self) -> dict[str, str]:
        """Field -> ``sha256:...`` of the file (or of every file under the directory) it names; hashed
        once per ``(path, size, mtime)``."""
        from collapse_probe._identity import file_fingerprint

        return {k: file_fingerprint(v) for k in self.DATA_FILES if (v := getattr(self, k))}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready copy (what ``config.json`` records under ``"arena"``), with the content
        fingerprints of the data files it names (``data_fingerprints``) when it names any."""
        d = asdict(self)
        fps = self.data_fingerprints()
        if fps:
            d["data_fingerprints"] = fps
        return d
