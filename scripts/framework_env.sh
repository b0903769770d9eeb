#!/usr/bin/env bash
# scripts/framework_env.sh DIR: virtual environments with collapse-probe and the RL framework releases its
# monitor adapters are tested with, as far as they install on a CPU machine; then run the framework tier:
#
#   DIR/bin/python -m pytest -m framework tests/framework          (verl 0.9.1, OpenRLHF 0.11.2, TRL 1.16.0)
#   DIR/art/bin/python -m pytest -m framework tests/framework      (ART 0.5.23; needs Python >= 3.12)
#
# Without the tests/framework argument pytest collects the whole suite before it deselects: DIR has none of
# the development extras (hypothesis, duckdb, polars) or provider SDKs, so a test module imports those
# through pytest.importorskip, never at module level (tests/framework/test_collection.py checks every module).
#
# verl and OpenRLHF go in with --no-deps: their full dependency sets do not install on CPU (OpenRLHF pins
# flash-attn and deepspeed, which build CUDA kernels; both pull vLLM or SGLang). What is installed beside
# them is what the adapters and the frameworks' modules they import need. ART 0.5.23 needs Python >= 3.12,
# so it gets its own environment at DIR/art when a Python 3.12 or newer is found (3.12 first; PYTHON312=/path/to/python
# names one); without one it is left out, and said so.
#
# PYTHON names the interpreter of DIR (default python3). Set FRAMEWORK_ENV_SKIP_ART=1 to leave ART out.
set -euo pipefail
if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: scripts/framework_env.sh DIR (the virtual environment to create)" >&2
    exit 2
fi
DIR=$1
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
export PIP_DISABLE_PIP_VERSION_CHECK=1

"$PY" -m venv "$DIR"
pip=("$DIR/bin/python" -m pip install -q)
"${pip[@]}" torch==2.13.0
"${pip[@]}" -e "$ROOT[trl]" pytest pytest-timeout "transformers>=5.5.3,<5.11,!=5.6.0"  # verl 0.9.1's range
"${pip[@]}" --no-deps verl==0.9.1 openrlhf==0.11.2
# verl's agent-loop and reward-loop modules; OpenRLHF's agent module (aiohttp) and Experience
"${pip[@]}" ray hydra-core omegaconf "tensordict>=0.8,<=0.10,!=0.9.0" codetiming pylatexenc aiohttp dill \
    pillow cachetools uvicorn fastapi
"$DIR/bin/python" -c "import verl.experimental.agent_loop.tool_agent_loop, verl.experimental.reward_loop.reward_loop, openrlhf.utils.agent, openrlhf.trainer.ppo_utils.experience, trl"
echo "framework_env: $DIR has verl 0.9.1, OpenRLHF 0.11.2 and TRL 1.16.0"

if [ "${FRAMEWORK_ENV_SKIP_ART:-0}" = 1 ]; then
    echo "framework_env: ART left out (FRAMEWORK_ENV_SKIP_ART=1)"
    exit 0
fi
PY312=${PYTHON312:-}
is_312() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; }
if [ -z "$PY312" ]; then
    candidates=(python3.12 python3.13)
    if command -v pyenv >/dev/null 2>&1; then  # pyenv's shims answer only for its selected versions
        for v in $(pyenv versions --bare 2>/dev/null | grep -E '^3\.(1[2-9])(\.[0-9]+)?$' | sort -V); do
            candidates+=("$(pyenv root)/versions/$v/bin/python")
        done
    fi
    for cand in "${candidates[@]}"; do
        if command -v "$cand" >/dev/null 2>&1 && is_312 "$cand"; then
            PY312=$cand
            break
        fi
    done
fi
if [ -z "$PY312" ]; then
    echo "framework_env: ART left out: openpipe-art 0.5.23 needs Python >= 3.12 and none was found (PYTHON312=...)"
    exit 0
fi
"$PY312" -m venv "$DIR/art"
"$DIR/art/bin/python" -m pip install -q -e "$ROOT" openpipe-art==0.5.23 pytest pytest-timeout
"$DIR/art/bin/python" -c "import art"
echo "framework_env: $DIR/art has ART 0.5.23 ($("$DIR/art/bin/python" -c 'import sys; print(sys.version.split()[0])'))"
