"""Model replicas as Ray actors: one backend per actor, each batch split across them.

:class:`RayReplicaModel` is a :class:`~collapse_probe.models.ChatModel` whose ``generate`` splits a
batch into contiguous sample ranges, one per replica, and hands each range to the least-loaded
replica actor. Each actor builds the backend from the same spec and options (local torch on CPU,
vLLM on a GPU group, an HTTP client with its share of the concurrency budget, a scripted model).
Nothing else changes: the batched engine still drives the run, and the wrapper sits *inside* the
response cache and reports the backend's ``spec``, ``cache_namespace`` and ``fingerprint()``, so
cache keys, conversations and run directories are the same with or without Ray.

Splitting is exact because every backend derives sample ``i`` of a request from
``(seed, first_sample + i)`` (see :mod:`collapse_probe.models._types`): samples 0..24 on one
replica and 25..49 on another are the draws 0..49 on one process would give. The local backend
also decodes a row identically whatever else shares its batch, so moving rows between replicas
does not move a single token.

Faults: actors are created with Ray's own restart and task-retry policy (``max_restarts``,
``max_task_retries``), so a replica that dies is restarted and its in-flight calls are re-run
there; a replica that stays dead is replaced by a new actor and the call is retried on the least
loaded live one. A cluster that disappears stops the run with :class:`~collapse_probe.errors.RunAbortedError`;
everything already recorded stays in the run directory and the same command resumes.

:func:`ray_replicas` activates the layer for a block: every model built with
:func:`~collapse_probe.models.get_model` inside it is served by replicas.

    >>> with ray_replicas("local", replicas=2, num_cpus=2):  # doctest: +SKIP
    ...     results = run_crossplay(config, ...)

Ray is imported only here, and only when a replica layer is asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Required, SupportsFloat, SupportsInt, TypedDict

from collapse_probe.core._constraints import Integer, Number, check_field, check_value
from collapse_probe.core._retry import RetryPolicy
from collapse_probe.core.limits import MAX_RAY_CPUS, MAX_REPLICAS
from collapse_probe.errors import ConfigError, InfraError, RunAbortedError, require
from collapse_probe.models._options import HTTPOptions
from collapse_probe.models._types import GenerationRequest, GenerationResult

if TYPE_CHECKING:
    from collapse_probe.models._usage import Usage, UsageRecord

logger = logging.getLogger(__name__)

HTTP_PREFIXES = (
    "openai",
    "openai-compatible",
    "azure",
    "anthropic",
    "bedrock",
    "vertex-anthropic",
    "google",
    "vertex",
    "litellm",
)
"""Backends that call a remote API: their replicas need no CPU and share one concurrency budget."""

DEFAULT_HTTP_CONCURRENCY = 16
"""The HTTP backends' own default ``concurrency`` (:class:`collapse_probe.models._http.APIChatModel`)."""

REPLICA_OPTIONS = ("replicas", "replica_cpus", "replica_gpus")
"""Backend options read by the replica layer itself (removed before the backend sees the options)."""

ACTOR_MAX_RESTARTS = 4
"""How often Ray restarts one replica actor before it is replaced by a new one."""
ACTOR_MAX_TASK_RETRIES = 2
"""How often Ray re-runs a call whose actor died while it was in flight."""
MAX_ATTEMPTS = 4
"""Calls of one split tried on (possibly different) replicas before its requests fail as infra errors."""
REPLICA_RETRY = RetryPolicy(max_retries=MAX_ATTEMPTS - 1, backoff_base=0.5, backoff_max=4.0)
"""The wait before the next replica is tried: gives a restarting or replacement actor a moment."""


# ---- the actor --------------------------------------------------------------------------------


class ReplicaInfo(TypedDict, total=False):
    """What a replica reports about its backend (:meth:`ReplicaServer.describe`)."""

    error: Required[tuple[str, str] | None]
    """``(exception class name, message)`` when the backend could not be built or started, else ``None``."""
    pid: Required[int]
    """The replica's process id."""
    cache_namespace: str | None
    fingerprint: str
    """The backend's content fingerprint, computed where it runs."""
    prompt_style: str | None
    score_choices: bool
    """Whether the backend scores closed answer sets."""
    lora: bool
    """Whether the backend serves LoRA views (vLLM with ``enable_lora``)."""


class ReplicaServer:
    """What runs inside one replica actor: a backend built from ``(spec, options)``.

    Construction errors are kept, not raised, so that a bad spec surfaces once on the driver as the
    same one-line error it would give without Ray instead of an actor that Ray keeps restarting.
    """

    def __init__(
        self,
        spec: str,
        options: Mapping[str, object],
        cwd: str | None,
        env: dict[str, str],
        price_table: str | None = None,
    ) -> None:
        from collapse_probe.models._usage import LEDGER

        os.environ.update(env)
        LEDGER.price_table_path = price_table  # costs priced as the driver prices them
        self._reported: dict[str, Usage] = {}
        """The ledger as last reported to the driver, per model spec."""
        if cwd and os.path.isdir(cwd):  # relative paths in specs (scripted:FILE.json) mean the driver's
            os.chdir(cwd)
        self.error: tuple[str, str] | None = None
        self.model: Any = None
        try:
            from collapse_probe.models._registry import get_model

            self.model = get_model(spec, **options)
        except Exception as exc:  # noqa: BLE001 - reported by describe()
            self.error = (type(exc).__name__, str(exc))

    def describe(self) -> ReplicaInfo:
        """The backend's identity and capabilities, or the error that kept it from being built."""
        if self.error is not None:
            return {"error": self.error, "pid": os.getpid()}
        from collapse_probe.core._identity import model_fingerprint

        m = self.model
        fingerprint = model_fingerprint(m)  # computed where the model runs: what actually answers
        return {
            "error": None,
            "pid": os.getpid(),
            "cache_namespace": getattr(m, "cache_namespace", None),
            "fingerprint": fingerprint,
            "prompt_style": getattr(m, "prompt_style", None),
            "score_choices": callable(getattr(m, "score_choices", None)),
            "lora": bool(getattr(m, "enable_lora", False)) and callable(getattr(m, "with_lora", None)),
        }

    async def generate(
        self, requests: Sequence[GenerationRequest], lora: str | None = None
    ) -> tuple[list[GenerationResult], dict[str, UsageRecord]]:
        """The backend's results, and the spend its calls added to this process's ledger since the
        last report (the driver adds it to its own, so usage and budgets count replicas' calls)."""
        if lora is None:
            results = await self.model.generate(list(requests))
        else:  # vLLM hot-loads the adapter at this path (a new LoRA id whenever its files change)
            results = await self.model.generate(list(requests), loras=[lora] * len(requests))
        return results, self._usage_since_last_report()

    def _usage_since_last_report(self) -> dict[str, UsageRecord]:
        from collapse_probe.models._usage import LEDGER

        delta = {}
        for spec, usage in LEDGER.snapshot().items():
            d = usage.minus(self._reported.get(spec))
            if d.requests or d.input_tokens or d.output_tokens:
                delta[spec] = d.to_dict()
            self._reported[spec] = usage
        return delta

    def start_engine(self) -> tuple[str, str] | None:
        """Start the backend's engine now (vLLM: build it and let it profile the GPU); the error, if any."""
        start = getattr(self.model, "start", None)
        if self.error is None and callable(start):
            try:
                start()
            except Exception as exc:  # noqa: BLE001 - reported to the driver like a construction error
                return (type(exc).__name__, str(exc))
        return None

    def lora_fingerprint(self, lora: str) -> str:
        """The fingerprint of the backend sampling through the adapter at ``lora``, as seen here."""
        from collapse_probe.core._identity import model_fingerprint

        return model_fingerprint(self.model.with_lora(lora))

    def sleep(self) -> None:
        if callable(getattr(self.model, "sleep", None)):
            self.model.sleep()

    def wake_up(self) -> None:
        if callable(getattr(self.model, "wake_up", None)):
            self.model.wake_up()

    async def score_choices(self, request: GenerationRequest, choices: Sequence[str], kwargs: dict) -> list[float]:
        return list(await self.model.score_choices(request, list(choices), **kwargs))


# ---- placement ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplicaResources:
    """What one replica actor asks the cluster for."""

    num_cpus: float
    num_gpus: float = 0.0
    tensor_parallel: int = 1
    """GPUs of one vLLM engine; above 1 the replica gets a placement group of that many GPU bundles."""


def _prefix(spec: str) -> str:
    if spec.startswith("scripted:"):
        return "scripted"
    return spec.split("/", 1)[0]


def replica_plan(
    spec: str, options: Mapping[str, object], replicas: int, cluster_gpus: float = 0.0
) -> tuple[ReplicaResources, list[dict[str, object]]]:
    """Resources of one replica and the backend options of each of ``replicas`` replicas.

    Local torch asks for one CPU (its torch threads) and, for ``device=cuda…`` -- or an ``hf/``
    model on its default ``device=auto`` when the cluster has GPUs (``cluster_gpus``), as it would
    run on CUDA in-process -- one GPU; vLLM asks for ``tensor_parallel_size`` GPUs, HTTP clients and
    scripted models for none. HTTP replicas split the model's ``concurrency`` budget (default 16) so
    that the provider sees at most that many calls in flight from all replicas together.
    """
    prefix = _prefix(spec)
    opts = {k: v for k, v in options.items() if k not in REPLICA_OPTIONS}
    cpus = options.get("replica_cpus")
    gpus = options.get("replica_gpus")
    for name, value in (("replica_cpus", cpus), ("replica_gpus", gpus)):
        check_value(value, f"{spec}: option {name}", [Number(ge=0, optional=True)])

    def pick(value: object, default: float) -> float:
        if value is None:
            return float(default)
        if isinstance(value, (str, SupportsFloat)):  # a number: check_value above refused anything else
            return float(value)
        raise ConfigError(f"{spec}: expected a number of CPUs or GPUs, got {value!r}")

    per_replica = [dict(opts) for _ in range(replicas)]
    if prefix in HTTP_PREFIXES:
        raw = opts.get("concurrency", DEFAULT_HTTP_CONCURRENCY)
        check_field(HTTPOptions, "concurrency", raw, f"{spec}: option concurrency")
        budget = _int_option(spec, "concurrency", raw)
        if budget < replicas:
            raise ConfigError(
                f"{spec}: {replicas} replicas cannot share a concurrency budget of {budget}; "
                "use fewer replicas or raise the concurrency option"
            )
        for i, o in enumerate(per_replica):
            o["concurrency"] = budget // replicas + (1 if i < budget % replicas else 0)
        return ReplicaResources(num_cpus=pick(cpus, 0), num_gpus=pick(gpus, 0)), per_replica
    if prefix == "vllm":
        tp = _int_option(spec, "tensor_parallel_size", opts.get("tensor_parallel_size", 1) or 1)
        if tp > 1:
            for o in per_replica:
                o.setdefault("distributed_executor_backend", "ray")
        return ReplicaResources(num_cpus=pick(cpus, 1), num_gpus=pick(gpus, tp), tensor_parallel=tp), per_replica
    if prefix in ("local", "hf"):
        device = str(opts.get("device") or ("cpu" if prefix == "local" else "auto"))
        on_gpu = device.startswith("cuda") or (device == "auto" and cluster_gpus > 0)
        default_gpus = 1.0 if on_gpu else 0.0
        return ReplicaResources(num_cpus=pick(cpus, 1), num_gpus=pick(gpus, default_gpus)), per_replica
    return ReplicaResources(num_cpus=pick(cpus, 0), num_gpus=pick(gpus, 0)), per_replica


def _int_option(spec: str, name: str, value: object) -> int:
    """An integer option given as a number or as text (``"4"``, as the backends read it)."""
    if isinstance(value, (str, SupportsInt)):
        return int(value)
    raise ConfigError(f"{spec}: option {name} must be an integer, got {value!r}")


def split_batch(requests: Sequence[GenerationRequest], parts: int) -> list[list[tuple[int, GenerationRequest]]]:
    """Split a batch into at most ``parts`` contiguous chunks of (nearly) equal sample counts.

    Each chunk is a list of ``(request index, sub-request)``; a request may be cut into sample
    ranges (``with_samples``), which draw exactly the samples the whole request would.
    """
    total = sum(r.n for r in requests)
    parts = max(1, min(parts, total))
    size = math.ceil(total / parts)
    chunks: list[list[tuple[int, GenerationRequest]]] = [[]]
    room = size
    for i, r in enumerate(requests):
        start, left = r.first_sample, r.n
        while left:
            if room == 0:
                chunks.append([])
                room = size
            take = min(left, room)
            chunks[-1].append((i, r if take == r.n else r.with_samples(start, take)))
            start, left, room = start + take, left - take, room - take
    return chunks


# ---- the driver-side model ----------------------------------------------------------------------


@dataclass(eq=False)
class _Replica:
    index: int
    options: dict[str, object]
    """The backend options this replica builds its model with."""
    handle: Any = None
    placement_group: Any = None
    in_flight: int = 0
    """Samples this replica is working on now (the least-loaded choice counts these)."""
    served: int = 0
    replaced: int = 0


@dataclass
class ReplicaStats:
    """Counters of one replicated model (for logs, tests and benchmarks)."""

    calls: int = 0
    retries: int = 0
    replaced: int = 0
    samples_per_replica: list[int] = field(default_factory=list)


class RayReplicaModel:
    """A :class:`~collapse_probe.models.ChatModel` served by ``replicas`` Ray actors.

    Args:
        spec: canonical model spec (every replica builds it; it stays this model's spec).
        options: backend options, as :func:`~collapse_probe.models.get_model` takes them, plus
            ``replica_cpus`` / ``replica_gpus`` to override what one replica asks the cluster for.
        replicas: number of actors.
        startup_timeout: seconds to wait for the replicas to load their backend.
    """

    def __init__(
        self, spec: str, options: Mapping[str, object], replicas: int, *, startup_timeout: float | None = None
    ) -> None:
        check_value(replicas, f"{spec}: replicas", [Integer(1, most=MAX_REPLICAS)])
        self.spec = spec
        self._ray = require("ray", "ray", "model replicas on Ray")
        gpus = float(self._ray.cluster_resources().get("GPU", 0.0)) if self._ray.is_initialized() else 0.0
        self.resources, per_replica = replica_plan(spec, options, replicas, cluster_gpus=gpus)
        self.stats_ = ReplicaStats(samples_per_replica=[0] * replicas)
        self._lock = threading.Lock()
        self._replicas = [_Replica(i, o) for i, o in enumerate(per_replica)]
        if self.shares_gpus:
            # vLLM profiles free GPU memory while it starts and assumes no other process changes it
            # meanwhile: engines that share a GPU start one after another, each fully up first.
            for rep in self._replicas:
                self._start(rep)
                self._describe_all(startup_timeout, [rep], start_engines=True)
        else:
            for rep in self._replicas:
                self._start(rep)
        info = self._describe_all(startup_timeout)
        # Mirror only what the backend has: the cache reads ``cache_namespace`` with a default, and a
        # wrapper that invented one would change every cache key.
        for name in ("cache_namespace", "prompt_style"):
            if info.get(name) is not None:
                setattr(self, name, info[name])
        self._fingerprint = info.get("fingerprint")
        self._has_score_choices = bool(info.get("score_choices"))
        self._has_lora = bool(info.get("lora"))

    def __repr__(self) -> str:
        return f"RayReplicaModel(spec={self.spec!r}, replicas={len(self._replicas)})"

    # ---- identity and extras ----

    def fingerprint(self) -> str:
        """The backend's content fingerprint, as a replica computed it (the cache keys on it)."""
        return str(self._fingerprint)

    def __getattr__(self, name: str) -> Any:
        if name == "score_choices" and self.__dict__.get("_has_score_choices"):
            return self._score_choices
        raise AttributeError(name)

    @property
    def replicas(self) -> int:
        return len(self._replicas)

    @property
    def shares_gpus(self) -> bool:
        """Whether replicas ask for a fraction of a GPU, so that several engines may share one."""
        return 0.0 < self.resources.num_gpus < 1.0

    def actor_handles(self) -> list[Any]:
        """The current actor of each replica (for tests that kill one)."""
        return [r.handle for r in self._replicas]

    def in_flight(self) -> list[int]:
        """Samples in flight per replica."""
        return [r.in_flight for r in self._replicas]

    def with_lora(self, path: str | Path, name: str | None = None) -> ReplicaLoraView:
        """A view that samples through the LoRA adapter at ``path`` on every replica.

        The path travels with every call and each replica's vLLM engine loads the adapter from it
        (again whenever its files change), so it must be on a filesystem every node sees.
        """
        if not self._has_lora:
            raise ConfigError(f"{self.spec}: with_lora needs the vllm backend built with enable_lora=True")
        return ReplicaLoraView(self, str(path), f"{self.spec}+lora:{name or Path(path).name}")

    def sleep(self) -> None:
        """Release every replica's GPU memory (vLLM sleep mode) while a learner step runs."""
        self._ray.get([r.handle.sleep.remote() for r in self._replicas])

    def wake_up(self) -> None:
        self._ray.get([r.handle.wake_up.remote() for r in self._replicas])

    # ---- lifecycle ----

    def _start(self, rep: _Replica) -> None:
        ray = self._ray
        res = self.resources
        threads = str(max(1, int(res.num_cpus))) if res.num_cpus >= 1 else "1"
        env = {"COLLAPSE_PROBE_TORCH_THREADS": os.environ.get("COLLAPSE_PROBE_TORCH_THREADS", threads)}
        actor_opts: dict[str, object] = {  # ray.remote(...).options keywords
            "num_cpus": res.num_cpus,
            "num_gpus": res.num_gpus,
            "max_restarts": ACTOR_MAX_RESTARTS,
            "max_task_retries": ACTOR_MAX_TASK_RETRIES,
            "max_concurrency": 1000,
        }
        if res.tensor_parallel > 1:  # vLLM workers go in this group; the driver actor holds no GPU
            from ray.util.placement_group import placement_group
            from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

            # bundle 0 holds the engine's driver actor; vLLM's Ray executor finds the GPU bundles in the
            # placement group it is started in and puts one tensor-parallel worker on each
            bundles = [{"CPU": max(res.num_cpus, 1.0)}] + [{"GPU": 1.0}] * res.tensor_parallel
            rep.placement_group = placement_group(bundles, strategy="STRICT_PACK")
            actor_opts.update(
                num_gpus=0,
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    rep.placement_group, placement_group_bundle_index=0, placement_group_capture_child_tasks=True
                ),
            )
        cls = ray.remote(ReplicaServer).options(**actor_opts)
        from collapse_probe.models._usage import LEDGER

        rep.handle = cls.remote(self.spec, rep.options, os.getcwd(), env, LEDGER.price_table_path)

    def _describe_all(
        self, timeout: float | None, replicas: list[_Replica] | None = None, start_engines: bool = False
    ) -> ReplicaInfo:
        ray = self._ray
        replicas = self._replicas if replicas is None else replicas
        try:
            infos = ray.get([r.handle.describe.remote() for r in replicas], timeout=timeout)
            if start_engines and all(info["error"] is None for info in infos):
                errors = ray.get([r.handle.start_engine.remote() for r in replicas], timeout=timeout)
                infos = [
                    info if err is None else {**info, "error": err} for info, err in zip(infos, errors, strict=True)
                ]
        except ray.exceptions.GetTimeoutError:
            self.close()
            raise InfraError(
                f"{self.spec}: {len(replicas)} replica(s) did not start within {timeout:.0f} s; the cluster "
                f"may lack the resources (each asks for {self.resources.num_cpus:g} CPU, "
                f"{self.resources.num_gpus:g} GPU; cluster has {_fmt_resources(ray.cluster_resources())})"
            ) from None
        except ray.exceptions.RayError as exc:
            self.close()
            raise InfraError(f"{self.spec}: a replica failed to start: {_first_line(exc)}") from None
        for info in infos:
            if info["error"] is not None:
                kind, msg = info["error"]
                self.close()
                if kind in ("ConfigError", "MissingDependencyError", "EngineStartError"):
                    raise ConfigError(msg)
                raise InfraError(f"{self.spec}: a replica failed to build the backend: {kind}: {msg}")
        first: ReplicaInfo = infos[0]  # every replica built the same backend
        return first

    def close(self) -> None:
        """Kill the replica actors (the model cannot be used afterwards)."""
        ray = self._ray
        for rep in self._replicas:
            with contextlib.suppress(Exception):
                if rep.handle is not None:
                    ray.kill(rep.handle, no_restart=True)
            with contextlib.suppress(Exception):
                if rep.placement_group is not None:
                    from ray.util.placement_group import remove_placement_group

                    remove_placement_group(rep.placement_group)
            rep.handle = None

    # ---- generation ----

    async def generate(self, requests: Sequence[GenerationRequest], lora: str | None = None) -> list[GenerationResult]:
        """One result per request; the batch is split across the replicas, least-loaded first."""
        from collapse_probe.models._usage import check_budget

        requests = list(requests)
        if not requests:
            return []
        check_budget(self.spec)  # replicas do not know the run's budget: the driver checks it per batch
        chunks = split_batch(requests, len(self._replicas))
        parts = await asyncio.gather(*(self._run_chunk(c, lora) for c in chunks))
        comps: list[list[Any]] = [[] for _ in requests]
        errors: dict[int, str] = {}
        for chunk, results in zip(chunks, parts, strict=True):
            for (i, _sub), res in zip(chunk, results, strict=True):
                if not res.ok:
                    errors.setdefault(i, res.error or "unknown error")
                else:
                    comps[i].extend(res.completions)
        out = []
        for i, r in enumerate(requests):
            if i in errors:
                out.append(GenerationResult([], error=errors[i]))
            elif len(comps[i]) != r.n:
                out.append(
                    GenerationResult([], error=f"{self.spec}: replicas returned {len(comps[i])} of {r.n} samples")
                )
            else:
                out.append(GenerationResult(comps[i]))
        return out

    async def _run_chunk(self, chunk: list[tuple[int, GenerationRequest]], lora: str | None) -> list[GenerationResult]:
        subs = [sub for _, sub in chunk]
        weight = sum(s.n for s in subs)
        try:
            results, usage = await self._call(weight, "generate", subs, lora)
        except _ReplicasFailed as exc:  # every attempt hit a failing replica: these requests fail, the run goes on
            return [GenerationResult([], error=str(exc)) for _ in subs]
        if usage:
            from collapse_probe.models._usage import LEDGER, Usage

            for spec, u in usage.items():
                LEDGER.merge(spec, Usage.from_dict(u))
        if not isinstance(results, list) or len(results) != len(subs):
            return [GenerationResult([], error=f"{self.spec}: replica returned a malformed batch") for _ in subs]
        return results

    async def _score_choices(self, request: GenerationRequest, choices: Sequence[str], **kwargs: Any) -> list[float]:
        return list(await self._call(1, "score_choices", request, list(choices), kwargs))

    def _pick(self, weight: int, avoid: _Replica | None) -> _Replica:
        with self._lock:
            live = [r for r in self._replicas if r is not avoid] or self._replicas
            rep = min(live, key=lambda r: (r.in_flight, r.index))
            rep.in_flight += weight
            return rep

    async def _call(self, weight: int, method: str, *args: Any) -> Any:
        ray = self._ray
        avoid: list[_Replica] = []  # the replica that failed last: the next try goes elsewhere

        async def attempt() -> Any:
            rep = self._pick(weight, avoid[0] if avoid else None)
            handle = rep.handle
            try:
                self.stats_.calls += 1
                result = await getattr(handle, method).remote(*args)
                rep.served += weight
                self.stats_.samples_per_replica[rep.index] += weight
                return result
            except ray.exceptions.RayTaskError as exc:
                # The backend itself raised: raise what it raised, as it would without Ray.
                cause = getattr(exc, "cause", None)
                if isinstance(cause, Exception):
                    raise cause from None
                raise InfraError(f"{self.spec}: {_first_line(exc)}") from None
            except ray.exceptions.RayError as exc:  # the actor, its worker or its node failed
                self.stats_.retries += 1
                logger.warning("%s: replica %d failed (%s)", self.spec, rep.index, _first_line(exc))
                self._check_cluster(exc)
                if isinstance(exc, ray.exceptions.ActorDiedError) and rep.handle is handle:
                    self._replace(rep)  # dead for good (restarts used up): a fresh actor takes its place
                avoid[:] = [rep]
                raise _TryAgain(_first_line(exc)) from None
            finally:
                with self._lock:
                    rep.in_flight -= weight  # a call waiting to be retried holds no replica

        try:
            return await REPLICA_RETRY.call(attempt, retry_on=lambda e: isinstance(e, _TryAgain), label=self.spec)
        except _TryAgain as exc:
            raise _ReplicasFailed(f"{self.spec}: replicas kept failing ({MAX_ATTEMPTS} attempts): {exc.last}") from None

    def _replace(self, rep: _Replica) -> None:
        with contextlib.suppress(Exception):
            self._ray.kill(rep.handle, no_restart=True)
        rep.replaced += 1
        self.stats_.replaced += 1
        self._start(rep)

    def _check_cluster(self, exc: BaseException) -> None:
        """Raise :class:`RunAbortedError` when the cluster itself is gone (not just one actor)."""
        if not cluster_alive(self._ray):
            raise RunAbortedError(
                f"the Ray cluster serving {self.spec} is gone ({type(exc).__name__}); what finished is saved "
                "in the run directory and the same command resumes"
            ) from None


class ReplicaLoraView:
    """:meth:`RayReplicaModel.with_lora`: the replicated model sampling through one LoRA adapter."""

    def __init__(self, base: RayReplicaModel, lora: str, spec: str) -> None:
        self.base, self.lora, self.spec = base, lora, spec
        for name in ("cache_namespace", "prompt_style"):
            if name in base.__dict__:
                setattr(self, name, base.__dict__[name])
        self._fingerprint: str | None = None

    def fingerprint(self) -> str:
        """Base model plus the adapter's content hash, computed by a replica (memoised per view)."""
        if self._fingerprint is None:
            handle = self.base.actor_handles()[0]
            self._fingerprint = str(self.base._ray.get(handle.lora_fingerprint.remote(self.lora)))
        return self._fingerprint

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        return await self.base.generate(requests, lora=self.lora)

    def sleep(self) -> None:
        self.base.sleep()

    def wake_up(self) -> None:
        self.base.wake_up()


class _TryAgain(Exception):
    """A transient Ray failure (a replica's actor, worker or node died; a local cluster missed its
    start-up window): retried by the policy; ``last`` is the one-line cause for the final error."""

    def __init__(self, last: str) -> None:
        super().__init__(last)
        self.last = last


class _ReplicasFailed(InfraError):
    """Every attempt of one call met a failed replica (the cluster itself still answers)."""


def cluster_alive(ray: Any, timeout: float = 3.0) -> bool:
    """Whether the cluster's control store (GCS) still answers.

    A TCP probe of the GCS port, not ``ray.nodes()``: with the GCS gone that call blocks for a
    minute and then Ray ends the process, which would turn a clean stop into a crash.
    """
    import socket

    if not ray.is_initialized():
        return False
    try:
        address = ray.get_runtime_context().gcs_address
    except Exception:  # noqa: BLE001 - a client connection (ray://) has no GCS address; assume alive
        return True
    host, _, port = str(address).rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def _first_line(exc: BaseException, limit: int = 200) -> str:
    """``Type: last non-empty line`` of an exception (Ray's messages carry tracebacks), at most ``limit`` chars."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    msg = f"{type(exc).__name__}: {lines[-1]}" if lines else type(exc).__name__
    return msg if len(msg) <= limit else msg[: limit - 3] + "..."


def _fmt_resources(res: Mapping[str, float]) -> str:
    keys = [k for k in ("CPU", "GPU") if k in res]
    return ", ".join(f"{res[k]:g} {k}" for k in keys) or "no CPU or GPU"


# ---- the session --------------------------------------------------------------------------------


@dataclass
class RaySession:
    """The replica layer of one run: which models get how many replicas, and the models made so far."""

    address: str
    replicas: int = 1
    per_model: dict[str, int] = field(default_factory=dict)
    """Replica count per canonical model spec, overriding ``replicas``."""
    startup_timeout: float | None = None
    models: dict[str, RayReplicaModel] = field(default_factory=dict)

    def replicas_for(self, spec: str, options: Mapping[str, object]) -> int:
        if options.get("replicas") is not None:
            return _int_option(spec, "replicas", options["replicas"])
        return self.per_model.get(spec, self.replicas)

    def model(self, spec: str, options: Mapping[str, object]) -> RayReplicaModel:
        """The replicated model for ``spec`` (built once per session, like :func:`get_model`)."""
        if spec not in self.models:
            n = self.replicas_for(spec, options)
            import ray

            gpus = float(ray.cluster_resources().get("GPU", 0.0))
            options = self._fit_local(spec, options, replica_plan(spec, options, n, cluster_gpus=gpus)[0], n)
            self.models[spec] = RayReplicaModel(spec, options, n, startup_timeout=self.startup_timeout)
        return self.models[spec]

    def _fit_local(
        self, spec: str, options: Mapping[str, object], res: ReplicaResources, n: int
    ) -> Mapping[str, object]:
        """On a ``local`` cluster (which cannot grow) make sure the replicas can be placed.

        CPU replicas that do not fit the CPUs left share the machine's cores without a reservation
        (a warning says so) rather than waiting forever; GPU replicas that do not fit are refused.
        A running cluster may autoscale, so there the placement is left to Ray.
        """
        if self.address != "local":
            return options
        import ray

        total = ray.cluster_resources()
        used = {"CPU": 0.0, "GPU": 0.0}
        for m in self.models.values():
            used["CPU"] += m.resources.num_cpus * m.replicas
            used["GPU"] += m.resources.num_gpus * m.replicas
        have_gpu = float(total.get("GPU", 0.0))
        if res.num_gpus and used["GPU"] + res.num_gpus * n > have_gpu + 1e-9:
            raise ConfigError(
                f"--replicas: {n} replica(s) of {spec} ask for {res.num_gpus * n:g} GPU and the models before it "
                f"for {used['GPU']:g}, but the local cluster has {have_gpu:g} GPU; use fewer replicas or "
                "-M replica_gpus=FRACTION"
            )
        have_cpu = float(total.get("CPU", 0.0))
        if res.num_cpus and used["CPU"] + res.num_cpus * n > have_cpu + 1e-9:
            logger.warning(
                "%s: the local cluster's %g CPUs are taken; its %d replica(s) share the cores without a reservation "
                "(--ray-num-cpus raises the count)",
                spec,
                have_cpu,
                n,
            )
            return {**options, "replica_cpus": 0}
        return options

    def close(self) -> None:
        for m in self.models.values():
            m.close()
        self.models.clear()


def active_session() -> RaySession | None:
    """The replica session models are built in right now (inside :func:`ray_replicas`), if any."""
    from collapse_probe.models import _registry

    owner = getattr(_registry._PROVIDER, "__self__", None)
    return owner if isinstance(owner, RaySession) else None


def parse_replicas(value: str | int | None) -> tuple[int, dict[str, int]]:
    """``"2"`` -> (2, {}); ``"2,scripted:a.json=1,smollm2=3"`` -> default 2 with per-model counts."""
    from collapse_probe.models._registry import resolve_spec

    if value is None:
        return 1, {}
    if isinstance(value, int):
        items = [str(value)]
    else:
        items = [s.strip() for s in str(value).split(",") if s.strip()]
    default, per_model = 1, {}
    for item in items:
        spec, sep, count = item.rpartition("=")
        text = count.strip()
        if not text.isdigit() or len(text) > 6 or not 1 <= int(text) <= MAX_REPLICAS:
            shown = item if len(item) <= 60 else f"{item[:60]}... ({len(item):,} characters)"
            raise ConfigError(
                f"--replicas: expected N or MODEL=N entries with N in [1, {MAX_REPLICAS:,}], got {shown!r}"
            )
        if sep:
            per_model[resolve_spec(spec)] = int(text)
        else:
            default = int(text)
    return default, per_model


LOCAL_START_ATTEMPTS = 3
"""Tries to start a ``local`` cluster: Ray gives its raylet a fixed 30 s to register, which a machine
under heavy load can miss; the next try usually makes it."""


def start_ray(ray: Any, address: str, num_cpus: int | None = None) -> None:
    """``ray.init`` for ``address`` with quiet settings; failures become one-line errors."""
    kwargs: dict[str, object] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if address == "local":
        kwargs.update(num_cpus=num_cpus or os.cpu_count() or 1, object_store_memory=100 * 1024**2)

    def attempt() -> None:
        try:
            ray.init(address=address, **kwargs)
        except ConnectionError as exc:
            raise InfraError(f"--ray-address {address}: cannot reach a Ray cluster: {_first_line(exc)}") from None
        except Exception as exc:  # noqa: BLE001 - Ray raises bare Exception when a node misses its start-up window
            with contextlib.suppress(Exception):
                ray.shutdown()  # stops whatever part of the local cluster did start
            raise _TryAgain(_first_line(exc)) from None

    retries = LOCAL_START_ATTEMPTS - 1 if address == "local" else 0
    policy = RetryPolicy(max_retries=retries, backoff_base=0.0, backoff_max=0.0)
    try:
        policy.call_sync(attempt, retry_on=lambda e: isinstance(e, _TryAgain), label="starting the local Ray cluster")
    except _TryAgain as exc:
        raise InfraError(f"--ray-address {address}: cannot start or join Ray: {exc.last}") from None


@contextlib.contextmanager
def ray_replicas(
    address: str | None,
    replicas: str | int | None = 1,
    *,
    num_cpus: int | None = None,
    startup_timeout: float | None = None,
) -> Iterator[RaySession]:
    """Serve every model built in this block by Ray replica actors.

    Args:
        address: ``"local"`` starts an in-process cluster that ends with the block; ``"auto"``
            joins the cluster ``ray start`` runs on this machine; anything else is a cluster
            address (``HOST:PORT`` or ``ray://HOST:10001``). ``None`` uses ``$RAY_ADDRESS``.
        replicas: replicas per model: ``N``, or ``"N,MODEL=M,..."`` with per-model counts.
        num_cpus: CPUs of a ``local`` cluster (default: this machine's).
        startup_timeout: seconds to wait for a model's replicas to come up (default: no limit).
    """
    from collapse_probe.models import _registry

    if address is None:
        address = os.environ.get("RAY_ADDRESS") or None
    if not address:
        raise ConfigError("--replicas needs a Ray cluster: pass --ray-address ADDRESS|auto|local or set $RAY_ADDRESS")
    default, per_model = parse_replicas(replicas)
    ray = require("ray", "ray", "model replicas on Ray (--ray-address)")
    started = False
    if not ray.is_initialized():
        if address != "local" and num_cpus is not None:
            raise ConfigError("--ray-num-cpus applies to --ray-address local only (a running cluster has its own)")
        check_value(num_cpus, "--ray-num-cpus", [Integer(1, optional=True, most=MAX_RAY_CPUS)])
        start_ray(ray, address, num_cpus)
        started = True
    session = RaySession(address=address, replicas=default, per_model=per_model, startup_timeout=startup_timeout)
    previous = _registry.set_model_provider(session.model)
    try:
        yield session
    finally:
        _registry.set_model_provider(previous)
        alive = cluster_alive(ray)
        if alive:  # with the cluster gone there is nothing to kill, and trying would wait for it
            with contextlib.suppress(Exception):
                session.close()
        if started:
            with contextlib.suppress(Exception):
                ray.shutdown()
