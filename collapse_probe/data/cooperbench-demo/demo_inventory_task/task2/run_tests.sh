#!/bin/bash
# Host-side runner: run_tests.sh <repo_path> <tests.patch> [<feature.patch>]
# Applies the feature patch (if given) and the tests patch with the reference runner's flags, then
# runs the task's test file with $PYTHON (default python3). No dependency installation.
set -e
usage() { echo "Usage: $0 <repo_path> <tests.patch> [<feature.patch>]"; exit 1; }
REPO_PATH="$1"; TEST_PATCH="$2"; FEATURE_PATCH="$3"
[[ -z "$REPO_PATH" || -z "$TEST_PATCH" ]] && usage
[[ ! -d "$REPO_PATH" ]] && { echo "ERROR: Repository not found at $REPO_PATH"; exit 1; }
[[ ! -f "$TEST_PATCH" ]] && { echo "ERROR: Test patch not found at $TEST_PATCH"; exit 1; }
[[ -n "$FEATURE_PATCH" && ! -f "$FEATURE_PATCH" ]] && { echo "ERROR: Feature patch not found at $FEATURE_PATCH"; exit 1; }
TEST_PATCH="$(realpath "$TEST_PATCH")"
[[ -n "$FEATURE_PATCH" ]] && FEATURE_PATCH="$(realpath "$FEATURE_PATCH")"
cd "$REPO_PATH"
if [[ -n "$FEATURE_PATCH" ]]; then
    echo "APPLYING_FEATURE_PATCH: $FEATURE_PATCH"
    git apply --ignore-whitespace --ignore-space-change "$FEATURE_PATCH" || git apply --3way "$FEATURE_PATCH"
fi
echo "APPLYING_TEST_PATCH: $TEST_PATCH"
git apply --ignore-whitespace --ignore-space-change "$TEST_PATCH" || git apply --3way "$TEST_PATCH"
echo "RUNNING_TESTS..."
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1  # the demo tests need no plugins; loading them dominates the run time
"${PYTHON:-python3}" -m pytest -p no:cacheprovider tests/test_store.py -v 2>&1
echo "TEST_EXECUTION_COMPLETED"
