"""``audit``: how collapsed is a simulator, where, with confidence intervals, and does Verbalized
Sampling help.

Pipeline:

1. **Probe states.** From the benchmark's data (P4G: for each donor persona, the state after the
   persuader's opening message and the closing donation-elicitation state; with ``human`` the
   prefixes of real P4G dialogues). Probe states are fixed prompts, not the states of Definition 3.1
   (the elicitation probe follows the opening with no reply in between, which no rollout does), and
   the results say so (``states_note``); with ``policy`` the states are *on-policy*: the simulator
   turns that rollouts of ``policy`` against the simulator actually visit (Definition 3.1).
2. **Sampling.** At every state the simulator draws N responses in one request (``n=N``, a seed per
   state) through the response cache, whose key holds the sample index: a cached audit replays the
   same N *independent* draws. States are batched into one ``generate`` call per chunk.
3. **Estimators per state** (:mod:`collapse_probe.metrics`): the chosen partitioner maps the N
   responses to equivalence classes; ε̂ = 1 − max_count/N with its CI, the bias-corrected ε, entropy
   (Chao–Wang–Jost, nats) with CI, Hill numbers, distinct-n, Vendi with embeddings. Where the model
   scores a closed answer set (``score_choices``) the P4G elicitation state gets the *exact*
   probabilities of the bare answers: their total mass (format compliance: how often the whole reply
   is one of them, not collapse) and ε of the answer given one of them (``summary.exact``).
4. **Trajectory** (on-policy): ε per turn, accumulated ε̄_H, the gradient-bias bound 2·B·R_max·ε̄_H,
   and optionally the simulator's share of reward variance (Lemma 3.3) by nested resampling.
5. **Verdict in two views** (:mod:`collapse_probe.pipelines.audit._verdict`): the *meaning* view (the headline
   classes, by meaning) and the *reward* view (classes = what the benchmark's reward pays, the arena's
   ``reward_class`` hook, at the states where the reward reads the reply), each COLLAPSED / NOT
   COLLAPSED / INCONCLUSIVE against ε* with the same interval method; ``verdicts`` in results.json
   and one ``verdict`` line. Without the sentence encoder the meaning view is not measured (the
   label fallback is not a meaning), so the verdict does not depend on which extras are installed.
6. **Verbalized Sampling** (``compare_vs``): the same states audited in direct and ``vs:`` modes,
   with the difference of the two printed estimates (and of the reward view) and the VS parse failures.
7. **Human reference** (``human``): simulated vs human donations (Wasserstein, KS, L1 over binned
   amounts) and response diversity vs the human persuadees' replies at the same prefixes.

Every state's record is appended to ``samples.jsonl`` as soon as it is done (resumable, no
duplicates). A backend error at a state is an infrastructure failure: the state is recorded as
such, excluded from every estimate and counted.
"""

from collapse_probe.pipelines.audit._api import audit, audit_async
from collapse_probe.pipelines.audit._config import (
    DONATION_BINS,
    P4G_AMOUNTS,
    P4G_OPENINGS,
    PARTITIONS,
    SAMPLES,
    SCHEMA,
    AuditConfig,
    ProbeState,
)
from collapse_probe.pipelines.audit._human import donation_comparison, human_reference
from collapse_probe.pipelines.audit._pipeline import run_audit, run_audit_async
from collapse_probe.pipelines.audit._presentation import summary_table, write_audit_report
from collapse_probe.pipelines.audit._published import read_published, run_audit_from, run_audit_from_async
from collapse_probe.pipelines.audit._sampling import exact_donation_distribution
from collapse_probe.pipelines.audit._states import benchmark_probe_states, human_probe_states, on_policy_states
from collapse_probe.pipelines.audit._summary import (
    collapse_error_difference,
    mean_collapse_error,
    mean_with_state_se,
    paired_difference,
    summarize_states,
)
from collapse_probe.pipelines.audit._trajectory import trajectory_summary, variance_share
from collapse_probe.pipelines.audit._verdict import VIEW_LABELS, audit_verdicts, verdict, verdict_line

__all__ = [
    "DONATION_BINS",
    "P4G_AMOUNTS",
    "P4G_OPENINGS",
    "PARTITIONS",
    "SAMPLES",
    "SCHEMA",
    "VIEW_LABELS",
    "AuditConfig",
    "audit_verdicts",
    "benchmark_probe_states",
    "collapse_error_difference",
    "ProbeState",
    "donation_comparison",
    "exact_donation_distribution",
    "human_probe_states",
    "human_reference",
    "mean_collapse_error",
    "mean_with_state_se",
    "on_policy_states",
    "read_published",
    "paired_difference",
    "audit",
    "audit_async",
    "run_audit",
    "run_audit_async",
    "run_audit_from",
    "run_audit_from_async",
    "summarize_states",
    "summary_table",
    "trajectory_summary",
    "variance_share",
    "verdict",
    "verdict_line",
    "write_audit_report",
]
