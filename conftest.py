"""Test configuration, before anything imports jax.

For the project's tests (tests/) and the series' own (tests/ of the patched
tree: build/series-tests, build/cut-*/tests, build/branch/jax-checkout/tests),
which pytest finds below this folder. The tests run on the CPU. Each test file asks for its 8 virtual CPU devices
itself, with `jtu.request_cpu_devices(8)` before it touches a device (as
upstream JAX's tests do), so that it also runs alone, without this file.
"""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# SciPy reads this when it is first imported: its array-API support (used by
# tests/array_api_test.py) is opt-in.
os.environ.setdefault("SCIPY_ARRAY_API", "1")
