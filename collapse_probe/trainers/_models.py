"""The models an LLM trainer trains: a LoRA-wrapped copy of a local base model, its backend and optimizer."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from collapse_probe.errors import ConfigError, require
from collapse_probe.simulators import Participant
from collapse_probe.trainers.config import TRAINABLE_PREFIXES, TrainConfig
from collapse_probe.trainers.reinforce import TrainingExample, reinforce_backward

if TYPE_CHECKING:
    from torch import Tensor


class UpdateStats(TypedDict):
    """What one optimizer step of a trained model did (:meth:`TrainedModel.update`)."""

    loss: float | None
    kl: float | None
    n_tokens: int
    """Completion tokens of the step's examples."""
    skipped: bool
    """No step was taken (no example with a non-zero coefficient, and no KL)."""
    logprob_mismatch: NotRequired[float | None]
    """Mean |learner - sampler| log-probability of the sampled tokens (``None``: no sampler log-probabilities)."""
    tis_clipped_share: NotRequired[float | None]
    """Share of those tokens whose importance weight hit the cap (``None`` without a cap)."""


@dataclass
class TrainedModel:
    """A model being trained: its LoRA-wrapped copy, the backend over it, and its optimizer."""

    name: str
    """``"policy"`` or ``"simulator"`` (checkpoint sub-directory)."""
    spec: str
    """Canonical spec of the base model."""
    model: Any
    """The peft model (a deep copy of the base with a LoRA adapter)."""
    tokenizer: Any
    backend: Any
    """:class:`~collapse_probe.models.local.LocalModel` over ``model`` (current weights)."""
    optimizer: Any
    participant: Participant
    base_path: str | None = None
    """Directory of the base weights (for the vLLM rollout backend)."""
    updates: int = 0
    """Optimizer steps applied so far."""
    version: int = 0
    """Training step of the last optimizer step (0: initial weights); a pool snapshot taken at
    step ``s >= version`` holds exactly the live weights."""

    @property
    def pad_id(self) -> int:
        return self.backend._pad_id()

    def adapter_state(self) -> dict[str, Tensor]:
        """A detached copy of the adapter weights."""
        peft = require("peft", "train", "LoRA training")
        return {k: v.detach().clone() for k, v in peft.get_peft_model_state_dict(self.model).items()}

    def load_adapter_state(self, state: dict[str, Tensor]) -> None:
        """Put back adapter weights an :meth:`adapter_state` copied."""
        peft = require("peft", "train", "LoRA training")
        result = peft.set_peft_model_state_dict(self.model, state)
        unexpected = list(getattr(result, "unexpected_keys", []) or [])
        if unexpected:
            raise ConfigError(f"adapter weights do not fit the {self.name} model (unexpected keys {unexpected[:3]})")

    def load_adapter_dir(self, directory: Path) -> None:
        safetensors = require("safetensors.torch", "train", "loading LoRA adapters", package="safetensors")
        f = directory / "adapter_model.safetensors"
        if not f.is_file():
            raise ConfigError(f"adapter file {str(f)!r} is missing")
        self.load_adapter_state(safetensors.load_file(str(f), device=str(next(self.model.parameters()).device)))

    def update(self, config: TrainConfig, examples: list[TrainingExample]) -> UpdateStats:
        """One optimizer step on ``examples`` with ``config``'s loss settings; skipped (no step) when every
        coefficient is 0 and there is no KL."""
        torch = require("torch", "train", "LoRA training")
        c, m = config, self
        n_tokens = sum(len(e.completion_ids) for e in examples)
        active = [e for e in examples if e.advantage * e.weight != 0.0]
        if not examples or (not active and c.kl_coef == 0):
            return {"loss": 0.0, "kl": 0.0, "n_tokens": n_tokens, "skipped": True}
        m.optimizer.zero_grad(set_to_none=True)
        # Zero-coefficient turns add exactly 0 to the policy-gradient term but still count in N.
        used = examples if c.kl_coef > 0 else active
        stats = reinforce_backward(
            m.model,
            used,
            pad_id=m.pad_id,
            temperature=c.rollout.temperature,
            kl_coef=c.kl_coef,
            micro_batch=c.train_batch,
            reference=m.model.disable_adapter if c.kl_coef > 0 else None,
            n_tokens=n_tokens,
            tis_cap=c.tis_cap if (c.rollout_backend == "vllm" and m.name == "policy") else None,
        )
        if c.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_([p for p in m.model.parameters() if p.requires_grad], c.max_grad_norm)
        m.optimizer.step()
        m.optimizer.zero_grad(set_to_none=True)
        m.updates += 1
        return {
            "loss": stats["loss"],
            "kl": stats["kl"],
            "n_tokens": n_tokens,
            "skipped": False,
            "logprob_mismatch": stats["logprob_mismatch"],
            "tis_clipped_share": stats["tis_clipped_share"],
        }


def load_trainable_base(spec: str, config: TrainConfig, shared: bool = True) -> tuple[Any, Any, str, str, str]:
    """Load the base model of a trainable spec: ``(model, tokenizer, prompt_style, canonical, path)``.

    Raises:
        ConfigError: the spec is not a local transformers model (``local/``, ``hf/`` or an alias).
    """
    from collapse_probe.models import resolve_spec
    from collapse_probe.models.local import (
        LOCAL_MODELS,
        converted_model_dir,
        load_hf_model,
        load_local_model,
    )

    canonical = resolve_spec(spec)
    if not canonical.startswith(TRAINABLE_PREFIXES):
        raise ConfigError(
            f"{spec!r} cannot be trained: LoRA training needs a local transformers model "
            f"(local/<name>, hf/<dir> or an alias of one such as smollm2), got {canonical!r}"
        )
    name = canonical.split("/", 1)[1]
    if canonical.startswith("local/"):
        model, tok = load_local_model(
            name, device=config.device or "cpu", dtype=config.dtype or "float32", shared=shared
        )
        return model, tok, LOCAL_MODELS[name].default_prompt_style, canonical, str(converted_model_dir(name))
    model, tok = load_hf_model(name, device=config.device or "auto", dtype=config.dtype or "auto", shared=shared)
    style = "chat" if getattr(tok, "chat_template", None) else "transcript"
    return model, tok, style, canonical, name


def make_lora_model(base: Any, config: TrainConfig, seed: int, copy_base: bool = True) -> Any:
    """``base`` wrapped with a LoRA adapter: a deep copy of it (``copy_base``, the shared base stays
    untouched for frozen uses), or ``base`` itself when the caller loaded a private copy."""
    torch = require("torch", "train", "LoRA training")
    peft = require("peft", "train", "LoRA training")
    torch.manual_seed(seed)
    lora = peft.LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=config.lora_target_modules,
        task_type="CAUSAL_LM",
    )
    import warnings

    with warnings.catch_warnings():
        # peft queries a transformers attribute that transformers has renamed; the notice is not ours to act on
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        return peft.get_peft_model(copy.deepcopy(base) if copy_base else base, lora)


def trained_model(name: str, spec: str, label: str, config: TrainConfig, lr: float, seed: int) -> TrainedModel:
    """A LoRA-wrapped private copy of ``spec``'s base, its backend, participant and AdamW optimizer."""
    from collapse_probe.models.local import LocalModel

    torch = require("torch", "train", "LoRA training")
    # A private copy wrapped in place: one copy of the base weights per trained model (frozen users
    # of the same spec share the cached clean copy), never a deep copy on top of a cached one.
    base, tok, style, canonical, path = load_trainable_base(spec, config, shared=False)
    model = make_lora_model(base, config, seed, copy_base=False)
    backend = LocalModel.from_loaded(f"{canonical}+lora:{label}", model, tok, prompt_style=style)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    return TrainedModel(name, canonical, model, tok, backend, optimizer, Participant(label, backend), path)
