"""The bottom layer every other package builds on: files and JSONL with their limits, config files,
constraints (the one validation system), the plugin registry guard, secrets, retry, the output rule,
run state and the package's limits (:mod:`collapse_probe.core.limits`). Nothing here imports a model,
a benchmark or a pipeline."""
