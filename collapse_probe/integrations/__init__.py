"""Where collapse-probe meets other tools: :mod:`~collapse_probe.integrations.monitor` (the collapse
monitor inside TRL, verl, OpenRLHF and ART training) and :mod:`~collapse_probe.integrations.interop`
(published formats read — τ2, τ-bench, inspect, verifiers, NeMo-Gym, JSONL — runs exported, model cards,
trackers). Each sits in a layer of its own (docs/architecture.md); this package only groups them."""
