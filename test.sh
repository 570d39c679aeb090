#!/usr/bin/env bash
# Runs the fork's test suite in .venv, building and installing the fork first
# (./setup.sh --no-demo, a no-op when nothing changed), then the same tests on
# the series cut after step 1 (tools/cut.py 1: the patches up to step 1, where
# the tests that need step 2 skip themselves), then the independent fixes'
# tests on the cut after them (tools/cut.py fix: upstream jax with the fixes
# alone), then the series applied with `git am` to the release's files,
# without the fork-only patches, with both flags on (tools/branch.py).  Extra
# arguments go to pytest on the first two runs and the last, e.g.
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
echo "[test] upstream's linters (ruff, pyrefly) on the series"
.venv/bin/python tools/lint.py || rc=$?
echo "[test] the series applied with git am to the release's files, flags on"
.venv/bin/python tools/branch.py -q "$@" || rc=$?
exit "$rc"
