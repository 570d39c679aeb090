#!/usr/bin/env bash
# Runs the fork's test suite in .venv, building and installing the fork first
# (./setup.sh --no-demo, a no-op when nothing changed): the project's tests
# (tests/) and the series' own (the test files its patches add, which the
# build writes to build/series-tests), with the fork's defaults. Then the
# series as a maintainer gets it, applied with `git am` to the release's
# files without the fork-only patches (tools/branch.py), cut after each step
# (the independent fixes, step 1, the whole series): each cut's own tests
# with every flag on and with the flags at their defaults (off), and the
# project's with the flags on. Between them, upstream's linters on the
# series and a smoke of every prefix of it. Extra arguments go to pytest on
# the first run and the flags-on runs of the branch, e.g.
#   ./test.sh build/series-tests/device_tracing_test.py -k scan
# With DEVTRACE_JAX_REPO set to a jax-ml/jax clone, the branch also gets the
# series' hunks of upstream's test files (tools/branch.py --jax-repo).
set -euo pipefail
cd "$(dirname "$0")"
./setup.sh --no-demo
rc=0
.venv/bin/python -m pytest "$@" || rc=$?
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
