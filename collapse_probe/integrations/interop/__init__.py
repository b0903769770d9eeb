"""Meet users where their data is: runs exported to the tools evaluation engineers already use, and
trajectories others published read back for an audit.

- :func:`export_run`: a finished ``play``, ``audit``, ``crossplay`` or ``train`` run as an inspect_ai
  eval log (``inspect view``, ``samples_df``), parquet tables with a documented schema
  (:func:`run_tables`, :func:`read_table`), or a Hugging Face ``datasets`` dataset.
- Readers of published trajectories (:func:`read_tau2_results` — voice runs too —, :func:`read_inspect_log`,
  :func:`read_jsonl_conversations`, :func:`read_verifiers_traces`, :func:`read_verifiers_results`,
  :func:`read_nemo_gym_rollouts`) into :class:`PublishedConversation` records, and
  :func:`shared_prefix_states`, the states an audit of them measures
  (``collapse-probe audit --from FILE``, :func:`collapse_probe.pipelines.audit.run_audit_from`).
- :func:`simulator_card`: a portable, fingerprinted summary of a simulator from run directories.
- :func:`log_run`: a run's figures logged to W&B, MLflow or TensorBoard.

Optional packages are imported only by the function that needs them (extras ``inspect``,
``parquet``, ``hf``, ``trackers``).
"""

from collapse_probe.integrations.interop._card import simulator_card, write_card
from collapse_probe.integrations.interop._export import FORMATS, export_run, hf_dataset
from collapse_probe.integrations.interop._inspect import build_eval_log, read_inspect_log
from collapse_probe.integrations.interop._jsonl import read_jsonl_conversations
from collapse_probe.integrations.interop._nemo_gym import read_nemo_gym_rollouts
from collapse_probe.integrations.interop._published import (
    PublishedConversation,
    PublishedMessage,
    PublishedRun,
    SharedPrefixState,
    shared_prefix_states,
    simulator_error_summary,
)
from collapse_probe.integrations.interop._rundata import RunData, load_run_data
from collapse_probe.integrations.interop._tables import json_columns, read_table, run_tables
from collapse_probe.integrations.interop._tau2 import read_tau2_results
from collapse_probe.integrations.interop._trackers import TRACKERS, log_run, run_figures
from collapse_probe.integrations.interop._verifiers import read_verifiers_results, read_verifiers_traces

__all__ = [
    "FORMATS",
    "TRACKERS",
    "PublishedConversation",
    "PublishedMessage",
    "PublishedRun",
    "RunData",
    "SharedPrefixState",
    "build_eval_log",
    "export_run",
    "hf_dataset",
    "json_columns",
    "load_run_data",
    "log_run",
    "read_inspect_log",
    "read_jsonl_conversations",
    "read_nemo_gym_rollouts",
    "read_table",
    "read_tau2_results",
    "read_verifiers_results",
    "read_verifiers_traces",
    "run_figures",
    "run_tables",
    "shared_prefix_states",
    "simulator_card",
    "simulator_error_summary",
    "write_card",
]
