"""Meet users where their data is: trajectories others published read back for an audit.

- Readers of published trajectories (:func:`read_tau2_results`, :func:`read_inspect_log`,
  :func:`read_jsonl_conversations`) into :class:`PublishedConversation` records, and
  :func:`shared_prefix_states`, the states an audit of them measures
  (``collapse-probe audit --from FILE``, :func:`collapse_probe.audit.run_audit_from`).

Optional packages are imported only by the function that needs them (extra ``inspect``).
"""

from collapse_probe.interop._inspect import read_inspect_log
from collapse_probe.interop._jsonl import read_jsonl_conversations
from collapse_probe.interop._published import (
    PublishedConversation,
    PublishedMessage,
    PublishedRun,
    SharedPrefixState,
    shared_prefix_states,
    simulator_error_summary,
)
from collapse_probe.interop._tau2 import read_tau2_results

__all__ = [
    "PublishedConversation",
    "PublishedMessage",
    "PublishedRun",
    "SharedPrefixState",
    "read_inspect_log",
    "read_jsonl_conversations",
    "read_tau2_results",
    "shared_prefix_states",
    "simulator_error_summary",
]
