# Tests of jitted computations that span several devices: they run as
# per-device stages, with the values, devices and transfers of eager mode.
#
# Written like JAX's own tests, so that they could be dropped into upstream's
# tests/ folder (as tests/cross_device_test.py).

import contextlib
import functools
import re
import sys

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

import jax
from jax import lax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P, SingleDeviceSharding
from jax._src import config
from jax._src import device_tracing
from jax._src import test_util as jtu

import device_test_util as dtu

if dtu.CROSS_DEVICE:
  from jax._src import device_stages
else:  # the series cut after step 1: every test here skips
  device_stages = None

config.parse_flags_with_absl()
jtu.request_cpu_devices(8)

_dev = dtu.dev

# The transfer guard logs from C++ to file descriptor 2. jtu.capture_stderr()
# captures the descriptor of sys.stderr, which pytest's output capture
# replaces with a file of its own; this captures descriptor 2 itself.
_capture_fd2 = functools.partial(jtu.capture_stderr.func, sys.__stderr__)


@contextlib.contextmanager
def device_to_device_transfers():
  """Counts the device-to-device transfers that jax.transfer_guard logs."""
  count = []
  with _capture_fd2() as log:
    with jax.transfer_guard("log_explicit"):
      yield lambda: count[0]
  count.append(len(re.findall("device-to-device transfer", log())))


_inner = jax.jit(lambda v: jax.device_put(v, _dev(4)) * 3)


@jax.custom_jvp
def _moved_twice(v):
  return jax.device_put(v, _dev(2)) * 2
_moved_twice.defjvp(lambda primals, tangents: (
    _moved_twice(primals[0]), jax.device_put(tangents[0], _dev(2)) * 2))


@jax.custom_vjp
def _moved_thrice(v):
  return jax.device_put(v, _dev(2)) * 3
# The backward pass sends the cotangent back to its primal's device.
_moved_thrice.defvjp(lambda v: (_moved_thrice(v), v),
                     lambda v, g: (jax.device_put(3 * g, v.device),))


def _programs(constant=None):
  """name -> (function, argument makers, d2d transfers it makes).

  Devices are looked up when a function or an argument maker runs, never
  here: the names are listed at class-definition time. `constant` is the
  array committed to cpu:4 that "committed_constant" closes over.
  """
  on = lambda i: (lambda a: jax.device_put(a, _dev(i)))
  unc = jnp.asarray
  return {
      # A value moved to another device, and computed on there.
      "put_then_compute": (
          lambda a: jax.device_put(a, _dev(2)) * 2 + 1, (on(1),), 1),
      # Two arguments on two devices, combined after an explicit move.
      "combined_after_put": (
          lambda a, b: (jax.device_put(a, _dev(2)) + b, a * 3),
          (on(1), on(2)), 1),
      # A step on another device in the middle of a computation.
      "helper_step_on_another_device": (
          lambda x: jax.device_put(jnp.cumsum(jax.device_put(
              jnp.sin(x), _dev(3))), _dev(1)) * x, (on(1),), 2),
      # Arguments on different devices that never meet.
      "unused_arguments_on_different_devices": (
          lambda a, b: a * 2, (on(1), on(2)), 0),
      "arguments_that_never_meet": (
          lambda a, b: (a * 2, jnp.sum(b)), (on(1), on(2)), 0),
      # Constants and created values follow their consumer.
      "constants_follow_their_consumer": (
          lambda a: (jax.device_put(a, _dev(2)) + jnp.arange(3.0),
                     a + jnp.ones(3), jnp.zeros(3, device=_dev(3))),
          (on(1),), 1),
      # A committed closed-over constant on a third device.
      "committed_constant": (lambda a: (a * 2, constant + 1), (on(1),), 0),
      # An uncommitted argument used on two devices.
      "uncommitted_used_on_two_devices": (
          lambda a, b, u: (a + jnp.sin(u), b * jnp.sin(u)),
          (on(1), on(2), unc), 0),
      # There and back again.
      "round_trip": (
          lambda a: jax.device_put(jax.device_put(a, _dev(2)) * 2,
                                   _dev(1)) + a,
          (on(1),), 2),
      "to_device": (lambda a: (a.to_device(_dev(2)) * 2, a), (on(1),), 1),
      # A nested jit that moves its argument.
      "nested_jit": (lambda a: _inner(a) + 1, (on(1),), 1),
      # Control flow that stays on one device, after a move.
      "scan_on_the_other_device": (
          lambda a: lax.scan(lambda c, t: (c * t, c),
                             jax.device_put(a, _dev(2)),
                             jnp.arange(1.0, 3.0))[0], (on(1),), 1),
      # Eagerly plain calls of their function: a transfer inside one runs
      # as it does outside.
      "checkpoint_with_a_transfer": (
          lambda a: jax.checkpoint(
              lambda v: jax.device_put(v, _dev(2)) * 2)(a),
          (on(1),), 1),
      "custom_jvp_with_a_transfer": (lambda a: _moved_twice(a) + 1,
                                     (on(1),), 1),
      "custom_vjp_with_a_transfer": (lambda a: _moved_thrice(a) + 1,
                                     (on(1),), 1),
      # Where an uncommitted value lands does not depend on the order in
      # which the transfers were traced: with no committed argument and
      # values on two devices, it lands where eager mode puts it.
      "two_puts_and_a_created_value": (
          lambda u: (jax.device_put(u, _dev(1)) * 2,
                     jax.device_put(u, _dev(2)) * 3, jnp.zeros(2) + 1),
          (unc,), 0),
      "two_puts_swapped_and_a_created_value": (
          lambda u: (jax.device_put(u, _dev(2)) * 3,
                     jax.device_put(u, _dev(1)) * 2, jnp.zeros(2) + 1),
          (unc,), 0),
      # Random numbers from a key moved to another device.
      "random_key_moved": (
          lambda k: jax.random.normal(jax.device_put(k, _dev(2)), (3,)),
          (lambda _: jax.device_put(jax.random.key(0), _dev(1)),), 1),
  }


def _program(name):
  """The program `name` and its arguments."""
  f, makers, transfers = _programs(
      constant=jax.device_put(jnp.full(3, 10.0), _dev(4)))[name]
  args = [m(np.arange(3.0, dtype=np.float32) + i)
          for i, m in enumerate(makers)]
  return f, makers, args, transfers


# Known limit (docs/design.md): an uncommitted argument moved to two devices
# gets cotangents on both, which the backward pass adds. Eagerly the VJP
# accumulates them on the default device; under jit they meet on two devices.
_NOT_DIFFERENTIATED_UNDER_JIT = {
    name: "cotangents of an uncommitted argument on two devices (known limit)"
    for name in ("two_puts_and_a_created_value",
                 "two_puts_swapped_and_a_created_value")}


@dtu.needs_cross_device
class CrossDeviceTestCase(dtu.DeviceTestCase):

  def assertSameAsEager(self, outs, eager):
    outs, eager = jax.tree.leaves(outs), jax.tree.leaves(eager)
    self.assertEqual(len(outs), len(eager))
    for out, e in zip(outs, eager):
      self.assertEqual(out.devices(), e.devices())
      self.assertTrue(out.committed)
      self.assertLessEqual(e.committed, out.committed)
      self.assertArraysAllClose(out, e, check_dtypes=True)


class ProgramsTest(CrossDeviceTestCase):

  @parameterized.parameters(sorted(_programs()))
  @jtu.thread_unsafe_test()  # sets a transfer guard, captures stderr
  def test_runs_as_in_eager_mode(self, name):
    f, _, args, transfers = _program(name)
    eager = f(*args)
    jitted = jax.jit(f)
    self.assertSameAsEager(jitted(*args), eager)

    # Steady state: no trace, lowering or compile; the same transfers as
    # eager mode makes, and no others.
    with (jtu.count_jit_tracing_cache_miss() as traces,
          jtu.count_jit_and_pmap_lowerings() as lowerings,
          jtu.count_jit_compilation_cache_miss() as compiles,
          device_to_device_transfers() as jit_transfers):
      outs = jax.block_until_ready(jitted(*args))
    self.assertSameAsEager(outs, eager)
    self.assertEqual((traces(), lowerings(), compiles()), (0, 0, 0))
    with device_to_device_transfers() as eager_transfers:
      jax.block_until_ready(f(*args))
    self.assertEqual(jit_transfers(), transfers)
    # Eager mode may move more: an uncommitted value it made on the default
    # device that a computation elsewhere consumes.
    self.assertLessEqual(jit_transfers(), eager_transfers())

  # All but the one whose argument is a PRNG key: nothing to differentiate.
  @parameterized.parameters(sorted(set(_programs()) - {"random_key_moved"}))
  @jtu.thread_unsafe_test()  # changes config
  def test_under_grad_and_vmap(self, name):
    if name in _NOT_DIFFERENTIATED_UNDER_JIT:
      self.skipTest(_NOT_DIFFERENTIATED_UNDER_JIT[name])
    f, makers, args, _ = _program(name)
    # The loss gathers the results' sums on cpu:1, where the first argument
    # is: they may not meet on different devices.
    loss = lambda *a: sum(jax.device_put(jnp.sum(o), _dev(1))
                          for o in jax.tree.leaves(f(*a)))
    grad = jax.grad(loss)
    eager = grad(*args)
    self.assertSameAsEager(jax.jit(grad)(*args), eager)
    # The transpose of a transfer is a transfer back: the cotangent is on
    # its primal's device.
    self.assertEqual(eager.devices(), args[0].devices())
    # Eager mode's values against an independent oracle: JAX without device
    # tracing, upstream's code paths (where the cotangent may land on another
    # device, so only values are compared).
    with config.device_tracing(False):
      upstream = grad(*args)
    self.assertArraysAllClose(eager, upstream, check_dtypes=True)
    batched = [jnp.stack([a, a + 1]) if m is not jnp.asarray else a
               for a, m in zip(args, makers)]
    in_axes = [0 if m is not jnp.asarray else None for m in makers]
    vmapped = jax.vmap(f, in_axes=in_axes)
    self.assertSameAsEager(jax.jit(vmapped)(*batched), vmapped(*batched))

  def test_values_read_back_in_the_trace(self):
    seen = []
    def f(a):
      b = jax.device_put(a, _dev(2))
      c = jnp.zeros(3, device=b.device) + b
      seen.append((a.device, b.device, c.device, jnp.ones(2).device))
      return c
    out = jax.jit(f)(jax.device_put(jnp.ones(3), _dev(1)))
    # An uncommitted value is on the computation's home device: the first
    # one committed in it.
    self.assertEqual(seen, [(_dev(1), _dev(2), _dev(2), _dev(1))])
    self.assertEqual(out.devices(), {_dev(2)})

  def test_uncommitted_inputs_and_outputs_land_on_the_home_device(self):
    f = jax.jit(lambda a, u: (jax.device_put(a, _dev(2)), u * 2, 1.0))
    outs = f(jax.device_put(jnp.ones(3), _dev(5)), jnp.ones(2))
    self.assertEqual([o.devices() for o in outs],
                     [{_dev(2)}, {_dev(5)}, {_dev(5)}])
    self.assertTrue(all(o.committed for o in outs))

  def test_each_device_s_work_runs_as_few_stages(self):
    def f(a, b):
      x = jnp.sin(a) * 2        # cpu:1
      y = jnp.cos(b) + 1        # cpu:2, independent of x
      z = jax.device_put(x, _dev(2)) + y
      return z, x + 1
    a = jax.device_put(jnp.ones(3), _dev(1))
    b = jax.device_put(jnp.ones(3), _dev(2))
    jax.jit(f)(a, b)
    jaxpr = jax.jit(f).trace(a, b).jaxpr
    staged = device_stages._staged_computation(jaxpr, "f")
    # cpu:1 once, the transfer, then cpu:2 once (y waits for the transfer).
    self.assertEqual((staged.num_stages, staged.num_transfers), (2, 1))
    self.assertAllClose(jax.jit(f)(a, b), f(a, b))

  def test_effects_keep_their_order_on_each_device(self):
    log = []
    def f(a):
      jax.debug.callback(lambda: log.append("first"), ordered=True)
      b = jax.device_put(a, _dev(2)) * 2
      jax.debug.callback(lambda: log.append("second"), ordered=True)
      return jax.device_put(b, _dev(1)) + a
    a = jax.device_put(jnp.ones(3), _dev(1))
    out = jax.block_until_ready(jax.jit(f)(a))
    self.assertEqual(log, ["first", "second"])
    self.assertEqual(out.devices(), {_dev(1)})
    self.assertAllClose(out, 3 * np.ones(3))

  def test_python_side_cost_is_one_cache_miss_per_call(self):
    f = jax.jit(lambda a: jax.device_put(jnp.sin(a), _dev(2)) * 2)
    a = jax.device_put(jnp.ones(3), _dev(1))
    f(a)
    with (jtu.count_pjit_cpp_cache_miss() as misses,
          jtu.count_infer_params_cache_miss() as infer_misses):
      for _ in range(10):
        f(a)
    # The outer call takes the Python path (one computation cannot span two
    # devices in the C++ path); its stages take the C++ path.
    self.assertEqual(misses(), 10)
    self.assertEqual(infer_misses(), 0)


class ErrorTest(CrossDeviceTestCase):

  def test_values_on_two_devices_meeting(self):
    a = jax.device_put(jnp.ones(3), _dev(1))
    def f(a):
      return jax.device_put(a, _dev(2)) + a
    line = f.__code__.co_firstlineno + 1
    with self.assertDeviceConflict(
        r"jax\.device_put\(\.\.\., device=cpu:2\) with device ids \[2\]",
        r"argument a of f",
        rf"They meet in `add` at .*cross_device_test\.py:{line}",
        "cannot meet in one operation"):
      jax.jit(f)(a)

  @parameterized.named_parameters(
      ("scan", lambda x, d: lax.scan(
          lambda c, t: (jax.device_put(c, d) + t, None), x,
          jnp.arange(2.0))[0]),
      ("while_loop", lambda x, d: lax.while_loop(
          lambda c: c[1] < 2, lambda c: (jax.device_put(c[0], d), c[1] + 1),
          (x, 0))[0]),
      ("fori_loop", lambda x, d: lax.fori_loop(
          0, 2, lambda i, c: jax.device_put(c, d), x)),
      ("cond", lambda x, d: lax.cond(
          True, lambda v: jax.device_put(v, d), lambda v: v, x)),
  )
  def test_transfer_inside_a_body_is_an_error(self, f):
    # The carry or branch types differ in their committed devices, as
    # eagerly, where a loop or a cond is one computation too.
    x = jax.device_put(jnp.ones(3), _dev(1))
    for g in (lambda v: f(v, _dev(2)), jax.jit(lambda v: f(v, _dev(2)))):
      with self.assertRaisesRegex(
          TypeError, r"(?s)(carry|branches).*committed devices do not match "
          r"\(cpu:(1 and cpu:2|2 and cpu:1)\)"):
        g(x)

  def test_a_sharding_constraint_does_not_move_a_value(self):
    # Only device_put moves values; a constraint to another device than the
    # value's is an error, as it is eagerly.
    a = jax.device_put(jnp.ones(3), _dev(1))
    f = lambda a: lax.with_sharding_constraint(a, SingleDeviceSharding(_dev(2)))
    with self.assertDeviceConflict(r"device ids \[1\]", r"device ids \[2\]",
                                   "They meet in `sharding_constraint`"):
      jax.jit(f)(a)

  def test_lowering_as_one_computation_is_an_error(self):
    f = jax.jit(lambda a: jax.device_put(a, _dev(2)) * 2)
    a = jax.device_put(jnp.ones(3), _dev(1))
    self.assertAllClose(f(a), 2 * np.ones(3))
    with self.assertRaisesRegex(device_tracing.DeviceConflictError,
                                "per-device stages.*cannot be lowered"):
      f.lower(a)

  def test_multi_device_sharding_is_an_error(self):
    mesh = jax.make_mesh((2,), ("i",), devices=jax.devices()[:2],
                         axis_types=(jax.sharding.AxisType.Auto,))
    f = jax.jit(lambda a: (jax.device_put(a, _dev(2)), a * 2),
                out_shardings=(None, NamedSharding(mesh, P())))
    with self.assertRaisesRegex(device_stages.CrossDeviceError,
                                "single-device in_shardings and out_shardings"):
      f(jax.device_put(jnp.ones(2), _dev(3)))

  @jtu.thread_unsafe_test()  # changes config
  def test_switch_off_is_the_single_device_error(self):
    a = jax.device_put(jnp.ones(3), _dev(1))
    f = jax.jit(lambda a: jax.device_put(a, _dev(2)) * 2)
    with config.device_tracing_cross_device(False):
      with self.assertRaisesRegex(device_tracing.DeviceConflictError,
                                  "cannot both hold values of one "
                                  "computation"):
        f(a)
    self.assertEqual(f(a).devices(), {_dev(2)})   # the key differs


class ShardingsTest(CrossDeviceTestCase):

  def test_single_device_in_and_out_shardings(self):
    f = jax.jit(lambda a, b: (jax.device_put(a, _dev(2)) + b, a),
                in_shardings=(SingleDeviceSharding(_dev(1)), None),
                out_shardings=(SingleDeviceSharding(_dev(5)),
                               SingleDeviceSharding(_dev(6))))
    a = jnp.ones(3)                                   # uncommitted: moved
    b = jax.device_put(jnp.ones(3), _dev(2))
    x, y = f(a, b)
    self.assertEqual((x.devices(), y.devices()), ({_dev(5)}, {_dev(6)}))
    self.assertTrue(x.committed and y.committed)
    self.assertAllClose(x, 2 * np.ones(3))

  def test_out_shardings_on_one_device_pin_the_computation(self):
    # As upstream: a jit whose results all go to one device runs there.
    f = jax.jit(lambda a: jax.device_put(a, _dev(2)) * 2,
                out_shardings=SingleDeviceSharding(_dev(6)))
    with self.assertRaisesRegex(device_tracing.DeviceConflictError,
                                r"out_shardings of jit .*device ids \[6\]"):
      f(jax.device_put(jnp.ones(3), _dev(1)))


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
