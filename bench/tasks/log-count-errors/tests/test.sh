#!/bin/bash
# Harbor's verifier entry point. It runs in the task's working directory (/app in Harbor's container) after the
# agent has finished; the tests are in $TESTS_DIR (Harbor: /tests) and the reward goes to $VERIFIER_DIR/reward.txt
# (Harbor: /logs/verifier). bench/eval sets both, and PYTHON to an interpreter that has pytest.
TESTS_DIR="${TESTS_DIR:-/tests}"
VERIFIER_DIR="${VERIFIER_DIR:-/logs/verifier}"
PYTHON="${PYTHON:-python3}"
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1  # the verdict must not depend on which pytest plugins are installed
export PYTHONDONTWRITEBYTECODE=1
mkdir -p "$VERIFIER_DIR"
"$PYTHON" -m pytest -q -p no:cacheprovider -rA "$TESTS_DIR/test_outputs.py"
status=$?
if [ "$status" -eq 0 ]; then echo 1 > "$VERIFIER_DIR/reward.txt"; else echo 0 > "$VERIFIER_DIR/reward.txt"; fi
exit "$status"
