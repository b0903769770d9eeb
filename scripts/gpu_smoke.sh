#!/usr/bin/env bash
# What to run first on a machine with one CUDA GPU (about 10 minutes at most): every GPU path of
# collapse-probe on a tiny random Llama built offline, with a pass / fail line per path and the
# sampler / learner log-probability mismatch of vLLM rollouts. vLLM paths are skipped (and say so)
# when vllm is not installed: pip install "collapse-probe[vllm]".
set -uo pipefail
cd "$(dirname "$0")/.."
python - <<'PY' || { echo "gpu-smoke: no CUDA GPU visible to torch"; exit 2; }
import torch, sys
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, device: {torch.cuda.get_device_name(0)}")
sys.exit(0 if torch.cuda.is_available() else 1)
PY
log=$(mktemp)
timeout "${GPU_SMOKE_TIMEOUT:-600}" python -m pytest -q -m gpu tests/gpu -rA -s \
    -p no:cacheprovider >"$log" 2>&1
rc=$?
grep -E "^GPU-SMOKE" "$log" || true
grep -E "^(PASSED|FAILED|SKIPPED|ERROR)" "$log" | sed 's/^/  /'
tail -n 1 "$log"
[ $rc -eq 124 ] && echo "gpu-smoke: timed out"
[ $rc -ne 0 ] && { echo "gpu-smoke: FAIL (full log: $log)"; exit 1; }
echo "gpu-smoke: PASS"
