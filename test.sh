#!/usr/bin/env bash
# Runs the fork's test suite in .venv, building and installing the fork first
# (./setup.sh --no-demo, a no-op when nothing changed), then the same tests on
# the series cut after step 1 (tools/cut.py 1: the patches up to step 1, where
# the tests that need step 2 skip themselves), then the independent fixes'
# tests on the cut after them (tools/cut.py fix: upstream jax with the fixes
# alone).  Extra arguments go to pytest on the first two runs, e.g.
# ./test.sh tests/device_tracing_test.py -k scan
set -euo pipefail
cd "$(dirname "$0")"
./setup.sh --no-demo
rc=0
.venv/bin/python -m pytest "$@" || rc=$?
echo "[test] the series cut after step 1"
.venv/bin/python tools/cut.py 1 "$@" || rc=$?
echo "[test] the series cut after the independent fixes"
.venv/bin/python tools/cut.py fix -q || rc=$?
exit "$rc"
