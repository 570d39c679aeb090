"""Test configuration: 8 virtual CPU devices, before anything imports jax."""

import os

_FLAG = "--xla_force_host_platform_device_count=8"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
  os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_FLAG}".strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# SciPy reads this when it is first imported: its array-API support (used by
# tests/array_api_test.py) is opt-in.
os.environ.setdefault("SCIPY_ARRAY_API", "1")
