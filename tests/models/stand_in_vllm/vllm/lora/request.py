"""Stand-in for ``vllm.lora.request`` (tests only)."""

from dataclasses import dataclass


@dataclass
class LoRARequest:
    lora_name: str
    lora_int_id: int
    lora_path: str
