# Memory kinds and one-device sharding classes under jit (issue 39, case 3).
#
# `jax.device_put(y, s)` inside jit, for every one-device sharding `s` the
# CPU backend can name: SingleDeviceSharding and a NamedSharding over a
# one-device mesh, given the memory kind directly or by `.with_memory_kind`,
# for each memory kind of a CPU device (device, pinned_host, unpinned_host),
# of an input committed to cpu:3 or cpu:5 or uncommitted, with the device
# named by `x.device` or given. Eager mode is the oracle for the device, the
# committed flag, the value and the memory kind; two differences are
# upstream JAX's own, and the fork keeps them (the fork with the switch off
# is upstream, and is the reference for them):
#
# - the class of an unspecified jit output sharding is recovered by
#   `pxla.maybe_recover_user_shardings` from the first of the computation's
#   input, output and intermediate shardings that has a class: a committed
#   input's SingleDeviceSharding, before the device_put's NamedSharding. The
#   result's sharding is equivalent to eager mode's (same device, layout and
#   memory kind); only its class differs.
# - "unpinned_host" is not a memory space of an aval in jax 0.12.1
#   (`core.MemorySpace` has Device and Host, which is pinned_host), so a
#   device_put to it inside jit lowers to device memory, in upstream as in
#   the fork; `jit(out_shardings=...)` with that memory kind does place the
#   result there.
#
# A device_put that moves a committed value to another device runs as eager
# mode runs it (between the stages of a computation that spans devices), and
# gives eager mode's sharding exactly. docs/design.md ("Known limits")
# records both differences.

import contextlib

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

import jax
import jax.numpy as jnp
from jax._src import config
from jax._src import test_util as jtu
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from jax._src.sharding_impls import SingleDeviceSharding

config.parse_flags_with_absl()
jtu.request_cpu_devices(8)

_MEMORY_KINDS = ("device", "pinned_host", "unpinned_host")

_SHARDINGS = {
    "single": lambda d, mk: SingleDeviceSharding(d, memory_kind=mk),
    "single_with_memory_kind": lambda d, mk: (
        SingleDeviceSharding(d).with_memory_kind(mk)),
    "named": lambda d, mk: NamedSharding(Mesh([d], ("a",)), P(),
                                         memory_kind=mk),
    "named_with_memory_kind": lambda d, mk: (
        NamedSharding(Mesh([d], ("a",)), P()).with_memory_kind(mk)),
}


def _upstream():
  return config.device_tracing(False)


class MemoryKindTest(jtu.JaxTestCase):

  def setUp(self):
    super().setUp()
    if jax.device_count() < 8:
      self.skipTest("needs 8 devices")
    if not hasattr(config, "device_tracing"):
      self.skipTest("needs the fork")

  @parameterized.named_parameters(
      (f"{mk}_{name}_{arg}_{target}", mk, name, arg, target)
      for mk in _MEMORY_KINDS
      for name in _SHARDINGS
      for arg, target in (("committed_5", "read"), ("committed_3", "cpu5"),
                          ("uncommitted", "cpu3")))
  def test_device_put_to_a_one_device_sharding(self, mk, name, arg, target):
    devices = jax.devices()
    x = (jax.device_put(jnp.arange(3.0), devices[int(arg[-1])])
         if arg.startswith("committed") else jnp.arange(3.0))

    def put(y, d):
      return jax.device_put(y * 2, _SHARDINGS[name](d, mk))

    def f(y):
      return put(y, y.device if target == "read" else
                 devices[int(target[-1])])

    # A move of a committed value inside jit needs several devices in one
    # jit (step 2 of the series; its switch is absent from step 1's cut).
    moved = arg.startswith("committed") and target != "read"
    cross_device = getattr(config, "device_tracing_cross_device", None)
    if moved and cross_device is None:
      self.skipTest("needs jax_device_tracing_cross_device")
    expected = f(x)
    with cross_device(True) if moved else contextlib.nullcontext():
      out = jax.jit(f)(x)
    device = next(iter(expected.devices()))
    # Upstream reads no device under jit and cannot move a committed
    # argument there: its reference names the device, where it runs.
    upstream = None
    if not moved:
      with _upstream():
        upstream = jax.jit(lambda y: put(y, device))(x)
      self.assertEqual(upstream.devices(), {device})
    self.assertArraysEqual(out, expected)
    self.assertEqual(out.devices(), {device})
    self.assertEqual(out.committed, expected.committed)
    self.assertEqual(expected.sharding.memory_kind, mk)
    # The memory kind: eager mode's, but for unpinned_host, which jit lowers
    # to device memory in upstream as well.
    if moved:
      # A move of a committed value runs as eager mode runs it: the
      # device_put between the stages of a computation that spans devices.
      self.assertEqual(out.sharding, expected.sharding)
      return
    if mk == "unpinned_host":
      self.assertEqual(out.sharding.memory_kind, "device")
      if upstream is not None:
        self.assertEqual(upstream.sharding.memory_kind, "device")
    else:
      self.assertEqual(out.sharding.memory_kind, mk)
    # The class: upstream's (a committed input's, else the device_put's),
    # whose sharding is equivalent to eager mode's.
    if upstream is not None:
      self.assertIs(type(out.sharding), type(upstream.sharding))
    if arg.startswith("committed"):
      self.assertIs(type(out.sharding), SingleDeviceSharding)
    self.assertTrue(out.sharding.is_equivalent_to(
        expected.sharding.with_memory_kind(out.sharding.memory_kind), 1))
    if not arg.startswith("committed"):
      self.assertIs(type(out.sharding), type(expected.sharding))

  @parameterized.named_parameters(
      (f"{mk}_{name}", mk, name)
      for mk in _MEMORY_KINDS for name in _SHARDINGS)
  def test_out_shardings_place_the_result_in_its_memory(self, mk, name):
    x = jax.device_put(jnp.arange(3.0), jax.devices()[3])
    s = _SHARDINGS[name](jax.devices()[3], mk)
    out = jax.jit(lambda y: y * 2, out_shardings=s)(x)
    self.assertArraysEqual(out, np.arange(3.0, dtype=np.float32) * 2)
    self.assertEqual(out.sharding, s)
    self.assertTrue(out.committed)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
