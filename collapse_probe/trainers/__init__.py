"""Trainers: the LLM reference trainers (REINFORCE + LoRA) and the tabular collapse lab.

Importing this package stays light: torch, transformers and peft load only when a trainer runs.
"""

from collapse_probe.trainers._models import TrainedModel
from collapse_probe.trainers._train_results import train_results
from collapse_probe.trainers.advantages import curriculum_reward, group_relative_advantages, simulator_advantages
from collapse_probe.trainers.config import METHODS as TRAIN_METHODS
from collapse_probe.trainers.config import TrainConfig
from collapse_probe.trainers.lab import METHODS, LabConfig
from collapse_probe.trainers.llm import LLMTrainer, run_train
from collapse_probe.trainers.methods import REGISTRY as METHOD_REGISTRY
from collapse_probe.trainers.methods import TrainMethod, get_method
from collapse_probe.trainers.population import PopulationPool
from collapse_probe.trainers.reinforce import TrainingExample, build_sequence, collate, reinforce_objective

__all__ = [
    "METHODS",
    "METHOD_REGISTRY",
    "TRAIN_METHODS",
    "LLMTrainer",
    "LabConfig",
    "PopulationPool",
    "TrainConfig",
    "TrainMethod",
    "TrainedModel",
    "TrainingExample",
    "build_sequence",
    "collate",
    "curriculum_reward",
    "get_method",
    "group_relative_advantages",
    "reinforce_objective",
    "run_train",
    "simulator_advantages",
    "train_results",
]
