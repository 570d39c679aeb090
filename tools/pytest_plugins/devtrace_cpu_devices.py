"""pytest plugin: the tests get exactly N virtual CPU devices.

  DEVTRACE_CPU_DEVICES=1 .venv/bin/python -m pytest tests/sharded_test.py

Test files ask for their devices themselves, at import, with
`jtu.request_cpu_devices(8)` (upstream JAX's tests do too); it raises
`jax_num_cpu_devices` to 8 whatever the environment says
(XLA_FLAGS=--xla_force_host_platform_device_count=1 or JAX_NUM_CPU_DEVICES=1
alone give 8 devices again), so that a run with fewer devices, as most users
have (one accelerator), needs the count fixed before the test files load.
With DEVTRACE_CPU_DEVICES=N in the environment this plugin, in each pytest
process that runs tests (each xdist worker, not the controller), sets
`jax_num_cpu_devices` to N and initialises JAX's backends at configure
time, before collection: `jtu.request_cpu_devices` then changes nothing (it
ignores the RuntimeError that a change after initialisation raises), and a
test file that sets `jax_num_cpu_devices` itself fails to import, visibly.
Tests that need more devices must skip (as upstream's do: `if
jax.device_count() < 8: self.skipTest(...)`).

The repository's conftest.py loads it (for tests/ and the series' tests);
tools/upstream_tests.py --devices N loads it with `-p` for upstream's test
files. Without DEVTRACE_CPU_DEVICES it does nothing.
"""

import os

ENV = "DEVTRACE_CPU_DEVICES"


def requested() -> int | None:
  """N from DEVTRACE_CPU_DEVICES, or None when it is unset or empty."""
  value = os.environ.get(ENV, "").strip()
  if not value:
    return None
  if not value.isdigit() or int(value) < 1:
    raise ValueError(f"{ENV}={value!r}: expected a number of devices >= 1")
  return int(value)


def pytest_configure(config):
  import pytest  # pylint: disable=g-import-not-at-top
  try:
    n = requested()
  except ValueError as e:
    raise pytest.UsageError(str(e)) from None
  if n is None:
    return
  # The xdist controller only distributes the tests; its workers run them.
  if (getattr(config, "workerinput", None) is None and
      getattr(config.option, "numprocesses", None)):
    return
  import jax  # pylint: disable=g-import-not-at-top
  jax.config.update("jax_num_cpu_devices", n)
  got = len(jax.devices("cpu"))   # initialises the backends
  if got != n:
    raise pytest.UsageError(f"{ENV}={n}: JAX made {got} CPU devices")


def pytest_report_header(config):
  n = requested()
  if n is not None:
    return [f"{ENV}={n}: {n} virtual CPU device(s), pinned before collection"]
  return None
