# Helpers shared by the device-tracing tests (not a test file itself).
#
# The tests run on 8 CPU devices: each test module calls
# `jtu.request_cpu_devices(8)` before it touches a device. Values are put on
# non-default devices (cpu:3, say), committed and uncommitted, and the tests
# check where results land.

import contextlib
import unittest

import jax
import jax.numpy as jnp
from jax._src import config
from jax._src import device_tracing
from jax._src import test_util as jtu

# The series' second step (several devices in one jit) defines the flag
# jax_device_tracing_cross_device. A build of the first step alone has no
# such flag; there, every computation is on one device, and a second device
# in it is a DeviceConflictError: what the second step does with the flag
# off.
CROSS_DEVICE = hasattr(config, "device_tracing_cross_device")

needs_cross_device = unittest.skipUnless(
    CROSS_DEVICE, "needs the series' second step (several devices in one jit)")


class _Unchanged(contextlib.ContextDecorator):

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    return False


def one_device_per_computation():
  """jax_device_tracing_cross_device off, where the flag exists.

  A context manager and a decorator, like the flag itself. In a build of the
  first step alone it changes nothing: that is already the behaviour there.
  """
  if CROSS_DEVICE:
    return config.device_tracing_cross_device(False)
  return _Unchanged()


def dev(i):
  """The i-th device (of the 8 CPU devices the tests request)."""
  return jax.devices()[i]


class DeviceTestCase(jtu.JaxTestCase):
  """Skips without 8 devices; checks the device and committedness of values."""

  def setUp(self):
    super().setUp()
    if jax.device_count() < 8:
      self.skipTest("needs 8 devices")

  def assertOn(self, x, device, committed):
    """Every array of the pytree `x` is on `device` alone, committed or not."""
    leaves = jax.tree.leaves(x)
    self.assertNotEmpty(leaves)
    for leaf in leaves:
      self.assertEqual(leaf.devices(), {device})
      self.assertEqual(leaf.committed, committed)

  @contextlib.contextmanager
  def assertDeviceConflict(self, *patterns):
    """The block raises a DeviceConflictError whose message matches each of
    the regular expressions `patterns`. (The call stays in the test, since the
    message names the line that called the jitted function.)"""
    with self.assertRaises(device_tracing.DeviceConflictError) as cm:
      yield cm
    msg = str(cm.exception)
    for p in patterns:
      self.assertRegex(msg, p)


class InputsTestCase(DeviceTestCase):
  """Inputs on cpu:3, a non-default device, committed and uncommitted."""

  def setUp(self):
    super().setUp()
    self.d0, self.d2, self.d3 = dev(0), dev(2), dev(3)
    self.x3 = jax.device_put(jnp.arange(3.0), self.d3)   # committed
    self.u = jnp.arange(3.0)                            # uncommitted
