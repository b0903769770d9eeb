#!/usr/bin/env bash
# Rewrite .ci/constraints.txt: the exact versions CI installs for the extras .ci/run names, resolved by
# uv in seconds (pip alone backtracks through boto3 / botocore releases for over an hour on 2 cores).
# Run it after changing a dependency in pyproject.toml; commit the result. Needs uv (pip install uv).
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS=(local embed train api ray dashboard browser export trackers trl dev)
args=()
for e in "${EXTRAS[@]}"; do args+=(--extra "$e"); done
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
echo "torch==2.13.0" >"$tmp.torch"
uv pip compile pyproject.toml "${args[@]}" --python-version 3.11 --find-links /opt/wheels \
    --constraint "$tmp.torch" --no-header --no-annotate -q -o "$tmp"
rm -f "$tmp.torch"
{
    echo "# Exact versions CI installs (uv pip compile of pyproject.toml's extras; scripts/lock_ci.sh rewrites it)."
    echo "# Without them pip's resolver backtracks through boto3 / botocore releases for over an hour on 2 cores"
    echo "# (inspect-ai's aiobotocore pins botocore narrowly; anthropic[bedrock] asks for boto3)."
    grep -v '^\s*#' "$tmp" | grep -v '^$'
} >.ci/constraints.txt
echo "wrote .ci/constraints.txt ($(grep -vc '^#' .ci/constraints.txt) pins)"
