#!/usr/bin/env bash
# Runs the fork's test suite in .venv, building and installing the fork first
# (./setup.sh --no-demo, a no-op when nothing changed): the project's tests
# (tests/) and the series' own (the test files its patches add, which the
# build writes to build/series-tests), with the fork's defaults. Then the
# same on ONE CPU device, as most users have one accelerator
# (DEVTRACE_CPU_DEVICES=1, tools/pytest_plugins/devtrace_cpu_devices.py):
# the tests that need more devices skip; left out are the files whose jax
# runs in subprocesses that make their own devices. Then upstream's pjit,
# array, multi_device and memories tests (of tests_commit, upstream.toml) on
# one device, in .venv-upstream and .venv (tools/upstream_tests.py
# --devices 1), failing if a test passes only upstream; it needs
# DEVTRACE_JAX_REPO (below), and says it is skipped without it. Then the
# series as a maintainer gets it, applied with `git am` to the release's
# files without the fork-only patches (tools/branch.py), cut after each step
# (the independent fixes, step 1, the whole series): each cut's own tests
# with every flag on and with the flags at their defaults (off), and the
# project's with the flags on. Between them, upstream's linters on the
# series and a smoke of every prefix of it. Extra arguments go to pytest on
# the first run and the flags-on runs of the branch, e.g.
#   ./test.sh build/series-tests/device_tracing_test.py -k scan
# With DEVTRACE_JAX_REPO set to a jax-ml/jax clone, the branch also gets the
# series' hunks of upstream's test files (tools/branch.py --jax-repo), and
# upstream's tests run on one device (above).
set -euo pipefail
cd "$(dirname "$0")"
./setup.sh --no-demo
rc=0
.venv/bin/python -m pytest "$@" || rc=$?
echo "[test] the project's and the series' tests on one CPU device"
DEVTRACE_CPU_DEVICES=1 .venv/bin/python -m pytest -q tests build/series-tests \
  --ignore=tests/build_test.py --ignore=tests/doc_snippets_test.py \
  --ignore=tests/multiprocess_test.py --ignore=tests/export_upstream_test.py \
  --ignore=tests/benchmarks_run_test.py --ignore=tests/accel_bench_test.py \
  --ignore=tests/upstream_tests_tool_test.py || rc=$?
echo "[test] upstream's tests on one CPU device, upstream against the fork"
if [ -n "${DEVTRACE_JAX_REPO:-}" ]; then
  tests_commit=$(.venv/bin/python -c 'import sys; sys.path.insert(0, "tools")
import forklib; print(forklib.load_pins().tests_commit)') || rc=$?
  .venv/bin/python tools/upstream_tests.py --jax-repo "$DEVTRACE_JAX_REPO" \
    --ref "$tests_commit" --devices 1 --out build/upstream-tests-1-device \
    pjit_test.py array_test.py multi_device_test.py memories_test.py || rc=$?
else
  echo "[test] skipped: no DEVTRACE_JAX_REPO (a jax-ml/jax clone to take" \
    "upstream's test files from)"
fi
branch=(.venv/bin/python tools/branch.py -q)
if [ -n "${DEVTRACE_JAX_REPO:-}" ]; then
  branch+=(--jax-repo "$DEVTRACE_JAX_REPO")
fi
echo "[test] the independent fixes applied with git am to the release's files"
"${branch[@]}" --step fix || rc=$?
echo "[test] the series up to step 1 applied with git am to the release's files"
"${branch[@]}" --step 1 "$@" || rc=$?
echo "[test] upstream's linters (ruff, pyrefly) on the series"
.venv/bin/python tools/lint.py || rc=$?
echo "[test] every prefix of the series imports and runs, flags off and on"
.venv/bin/python tools/prefixes.py | tail -1 || rc=$?
echo "[test] the whole series applied with git am to the release's files"
"${branch[@]}" "$@" || rc=$?
exit "$rc"
