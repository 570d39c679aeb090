#!/usr/bin/env bash
# Runs the fork's test suite in .venv, building and installing the fork first
# (./setup.sh --no-demo, a no-op when nothing changed).  Extra arguments go to
# pytest, e.g. ./test.sh tests/device_tracing_test.py -k scan
set -euo pipefail
cd "$(dirname "$0")"
./setup.sh --no-demo
exec .venv/bin/python -m pytest "$@"
