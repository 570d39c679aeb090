"""Test configuration, before anything imports jax.

For the project's tests (tests/) and the series' own (tests/ of the patched
tree: build/series-tests, build/cut-*/tests, build/branch/jax-checkout/tests),
which pytest finds below this folder. The tests run on the CPU. Each test file asks for its 8 virtual CPU devices
itself, with `jtu.request_cpu_devices(8)` before it touches a device (as
upstream JAX's tests do), so that it also runs alone, without this file.
With DEVTRACE_CPU_DEVICES=N in the environment they get N devices instead
(the plugin tools/pytest_plugins/devtrace_cpu_devices.py, loaded here; the
single-device run of ./test.sh sets N=1), and the tests that need more skip.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "tools", "pytest_plugins"))
pytest_plugins = ["devtrace_cpu_devices"]

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# SciPy reads this when it is first imported: its array-API support (used by
# tests/array_api_test.py) is opt-in.
os.environ.setdefault("SCIPY_ARRAY_API", "1")
