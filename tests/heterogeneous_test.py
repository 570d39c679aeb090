# Tests of device tracing on a machine whose default device is an accelerator
# (a GPU or a TPU), with arrays committed to the CPU: the case of
# jax-ml/jax#26000 as reported.
#
# HeterogeneousTest needs an accelerator that is the default device. The
# suite's conftest sets JAX_PLATFORMS=cpu, so it skips there; on a GPU machine
# run
#   JAX_PLATFORMS= .venv/bin/python -m pytest -n 1 tests/heterogeneous_test.py
# and on a TPU machine (tools/accel_bench.py runs it there)
#   JAX_PLATFORMS=tpu,cpu python tests/heterogeneous_test.py
# SimulatedHeterogeneousTest runs the same cases everywhere with cpu:0 (the
# default device) standing for the accelerator and cpu:3 for the CPU.

import os
from pathlib import Path
import sys

from absl.testing import absltest
import numpy as np

import jax
import jax.numpy as jnp
from jax._src import config
from jax._src.internal_test_util import device_tracing_test_util as dtu
from jax._src import test_util as jtu

config.parse_flags_with_absl()
jtu.request_cpu_devices(8)

# The example picks the devices: one choice of the accelerator for both.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import heterogeneous  # noqa: E402


class HeterogeneousTest(jtu.JaxTestCase):
  """Default device an accelerator, `x` committed to the CPU, `y` not."""

  def pick_devices(self):
    """Returns (the default accelerator, the CPU device), or skips."""
    accel, cpu, why = heterogeneous.default_accelerator()
    if why:
      platforms = os.environ.get("JAX_PLATFORMS")
      self.skipTest(why + (f" (JAX_PLATFORMS={platforms!r}: on a machine with "
                           "an accelerator run with it unset, or naming the "
                           "accelerator's platform and cpu)"
                           if platforms else ""))
    return accel, cpu

  def setUp(self):
    super().setUp()
    self.accel, self.cpu = self.pick_devices()
    self.x = jax.device_put(jnp.arange(4.0), self.cpu)   # committed to the CPU
    self.y = jnp.arange(4.0)                             # uncommitted
    self.assertOn(self.x, self.cpu, True)
    self.assertOn(self.y, self.accel, False)

  def assertOn(self, a, device, committed):
    self.assertEqual(a.devices(), {device})
    self.assertEqual(a.committed, committed)

  def assertPlacedAlike(self, a, b):
    """`a` (jitted) is where `b` (eager) is, committed alike, equal values."""
    self.assertEqual(a.devices(), b.devices())
    self.assertEqual(a.committed, b.committed)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

  def test_device_of_a_cpu_array_under_jit(self):
    seen = []

    @jax.jit
    def f(x):
      seen.append((x.device, x.devices()))
      return x + 1

    out = f(self.x)
    self.assertEqual(seen, [(self.cpu, {self.cpu})])
    # Eagerly, alike.
    self.assertEqual(self.x.device, self.cpu)
    self.assertPlacedAlike(out, self.x + 1)
    self.assertOn(out, self.cpu, True)

  def test_zeros_on_the_device_of_x(self):
    f = jax.jit(lambda x: jnp.zeros(3, device=x.device))
    out = f(self.x)
    self.assertOn(out, self.cpu, True)
    self.assertPlacedAlike(out, jnp.zeros(3, device=self.x.device))
    # An uncommitted x is on the default device, and device= commits to it.
    self.assertOn(f(self.y), self.accel, True)
    self.assertOn(jnp.zeros(3, device=self.y.device), self.accel, True)

  def test_an_unused_cpu_argument_places_the_computation_on_the_cpu(self):
    f = jax.jit(lambda x, y: y * 2)
    out = f(self.x, self.y)
    self.assertOn(out, self.cpu, True)
    np.testing.assert_array_equal(np.asarray(out), np.arange(4.0) * 2)
    # As eagerly when y is first moved to x's device.
    self.assertPlacedAlike(out, jax.device_put(self.y, self.x.device) * 2)
    # With no committed argument it runs on the default device, uncommitted,
    # as `y * 2` does eagerly.
    self.assertPlacedAlike(f(self.y, self.y), self.y * 2)
    self.assertOn(self.y * 2, self.accel, False)

  @dtu.needs_cross_device
  def test_device_put_to_the_accelerator_under_jit(self):
    out = jax.jit(lambda x: jax.device_put(x, self.accel))(self.x)
    self.assertOn(out, self.accel, True)
    self.assertPlacedAlike(out, jax.device_put(self.x, self.accel))
    # Work after the move runs on the accelerator, before it on the CPU.
    out = jax.jit(lambda x: jax.device_put(x * 2, self.accel) + 1)(self.x)
    self.assertOn(out, self.accel, True)
    self.assertPlacedAlike(out, jax.device_put(self.x * 2, self.accel) + 1)
    # An uncommitted argument, alike.
    out = jax.jit(lambda y: jax.device_put(y, self.accel))(self.y)
    self.assertPlacedAlike(out, jax.device_put(self.y, self.accel))


class SimulatedHeterogeneousTest(HeterogeneousTest):
  """The same cases, cpu:0 (the default device) standing for the accelerator."""

  def pick_devices(self):
    devices = jax.devices()
    if devices[0].platform != "cpu" or len(devices) < 4:
      self.skipTest("needs 4 CPU devices, the default among them: "
                    f"got {devices}")
    return devices[0], devices[3]


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
