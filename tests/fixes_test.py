# Tests of five small placement fixes that stand on their own, without device
# tracing, so that each could be proposed to upstream JAX by itself:
#
# 1. jnp.empty_like(x, device=...) under jit no longer calls addressable_data
#    on a tracer;
# 2. eager creation with device=d computes on d, with no implicit transfer;
# 3. an unused committed argument of a jit still decides where it runs;
# 4. device= of jnp.asarray/jnp.array moves an array committed elsewhere;
# 5. a device= that is not a device is a clear TypeError.
#
# The file imports only public JAX and test_util, as upstream's tests do
# (jax.lax has no public empty_like: fix 1 is tested through jnp.empty_like,
# which reaches it with both sharding forms). Tests marked as controls pass
# without the fixes too.

import itertools
import re

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P, SingleDeviceSharding
from jax._src import config
from jax._src import test_util as jtu

config.parse_flags_with_absl()
jtu.request_cpu_devices(8)

_DTYPES = [np.float32, np.int32, np.bool_, np.complex64]
_SHAPES = [(), (3,), (2, 3)]


def _values(shape, dtype=np.float32):
  return np.arange(np.prod(shape, dtype=int)).reshape(shape).astype(dtype)


def _name(value):
  if isinstance(value, tuple):
    return "x".join(map(str, value)) or "scalar"
  if isinstance(value, np.generic):
    return f"{type(value).__name__}_{value}"
  return getattr(value, "__name__", str(value))


def _cases(**axes):
  """Test cases over the product of `axes`, each named after its values."""
  return parameterized.named_parameters(
      dict(testcase_name="".join(f"_{_name(v)}" for v in values),
           **dict(zip(axes, values)))
      for values in itertools.product(*axes.values()))


def _sharding(kind, device):
  if kind == "single":
    return SingleDeviceSharding(device)
  return NamedSharding(Mesh(np.array([device]), ("x",)), P())


class _DeviceTestCase(jtu.JaxTestCase):

  def setUp(self):
    super().setUp()
    if jax.device_count() < 8:
      self.skipTest("requires 8 devices")
    self.d3, self.d5 = jax.devices()[3], jax.devices()[5]

  def assertCommittedTo(self, out, device):
    self.assertEqual(out.devices(), {device})
    self.assertTrue(out.committed)


class EmptyLikeUnderTraceTest(_DeviceTestCase):

  @_cases(dtype=_DTYPES, shape=_SHAPES, x=["on_d3", "uncommitted"])
  def test_empty_like(self, dtype, shape, x):
    committed = x == "on_d3"
    x = _values(shape, dtype)
    x = jax.device_put(x, self.d3) if committed else jnp.asarray(x)
    out = jax.jit(lambda x: jnp.empty_like(x, device=self.d3))(x)
    self.assertEqual((out.shape, out.dtype), (shape, np.dtype(dtype)))
    # Where an uncommitted x puts it is not part of this fix: only check that.
    if committed:
      self.assertCommittedTo(out, self.d3)

  @_cases(kind=["single", "named"])
  def test_sharding(self, kind):
    x3 = jax.device_put(_values((2, 3)), self.d3)
    s = _sharding(kind, self.d3)
    out = jax.jit(lambda x: jnp.empty_like(x, device=s))(x3)
    self.assertEqual((out.shape, out.dtype), ((2, 3), np.float32))
    self.assertCommittedTo(out, self.d3)

  @_cases(dtype=[None, np.bool_, np.complex64], shape=[None, (), (4, 5)])
  def test_dtype_and_shape_overrides(self, dtype, shape):
    x3 = jax.device_put(_values((2, 3)), self.d3)
    f = jax.jit(lambda x: jnp.empty_like(x, dtype=dtype, shape=shape,
                                         device=self.d3))
    out = f(x3)
    self.assertEqual(out.shape, (2, 3) if shape is None else shape)
    self.assertEqual(out.dtype, np.float32 if dtype is None else dtype)
    self.assertCommittedTo(out, self.d3)

  def test_vmap_inside_jit(self):
    x3 = jax.device_put(_values((4, 3), np.int32), self.d3)
    f = jax.jit(jax.vmap(lambda row: jnp.empty_like(row, device=self.d3)))
    out = f(x3)
    self.assertEqual((out.shape, out.dtype), ((4, 3), np.int32))
    self.assertCommittedTo(out, self.d3)


class CreateOnDeviceTest(_DeviceTestCase):

  def check_guarded(self, make, expected):
    """`make(device)` on d3 under a disallow guard: value, dtype, placement."""
    make(self.d3)  # Compiles outside the guard.
    with jax.transfer_guard("disallow"):
      out = make(self.d3)
    self.assertCommittedTo(out, self.d3)
    self.assertEqual(out.dtype, make(None).dtype)
    if expected is not None:
      self.assertArraysEqual(out, expected)
      if np.issubdtype(expected.dtype, np.floating):
        self.assertArraysEqual(np.signbit(out), np.signbit(expected))
    return out

  @_cases(name=["zeros", "ones"])
  @jtu.thread_unsafe_test()
  def test_zeros_ones(self, name):
    make = lambda d: getattr(jnp, name)((2, 3), device=d)
    self.check_guarded(make, getattr(np, name)((2, 3)))

  @_cases(fill=[2.0, -0.0, float("nan"), float("inf"), True, 7, 3 + 4j,
                np.float32(2.5), np.int32(-3), np.bool_(True)])
  @jtu.thread_unsafe_test()
  def test_full(self, fill):
    self.check_guarded(lambda d: jnp.full((2, 3), fill, device=d),
                       np.full((2, 3), fill))

  # Control: upstream's jnp.empty already passes this (nothing to transfer).
  @jtu.thread_unsafe_test()
  def test_empty(self):
    out = self.check_guarded(lambda d: jnp.empty((2, 3), device=d), None)
    self.assertEqual(out.shape, (2, 3))

  @_cases(name=["zeros_like", "ones_like", "full_like", "empty_like"],
          x=["on_d5", "uncommitted"])
  @jtu.thread_unsafe_test()
  def test_like(self, name, x):
    on_d5 = x == "on_d5"
    x = _values((2, 3))
    x = jax.device_put(x, self.d5) if on_d5 else jnp.asarray(x)
    args = (2.5,) if name == "full_like" else ()
    out = self.check_guarded(
        lambda d: getattr(jnp, name)(x, *args, device=d),
        None if name == "empty_like" else getattr(np, name)(x, *args))
    self.assertEqual(out.shape, (2, 3))

  @_cases(M=[None, 4], k=[0, 1, -1])
  @jtu.thread_unsafe_test()
  def test_eye(self, M, k):
    self.check_guarded(lambda d: jnp.eye(3, M, k=k, device=d), np.eye(3, M, k))

  @jtu.thread_unsafe_test()
  def test_array_api_pattern(self):
    x3 = jax.device_put(_values((3,)), self.d3)
    add = lambda d: x3 + jnp.zeros(
        x3.shape, device=None if d is None else x3.device)
    self.check_guarded(add, _values((3,)))

  def check_no_compile(self, make, args):
    """After make(args[0]), the other make(a) compile nothing, transfer none."""
    make(args[0])
    with (jtu.count_jit_compilation_cache_miss() as count,
          jax.transfer_guard("disallow")):
      outs = [make(a) for a in args[1:]]
    self.assertEqual(count(), 0)
    for out in outs:
      self.assertCommittedTo(out, self.d3)
    return outs

  @jtu.thread_unsafe_test()
  def test_new_fill_value_does_not_compile(self):
    fills = [1.5, 2.5, -0.0, float("nan"), 1e30]
    outs = self.check_no_compile(lambda v: jnp.full(3, v, device=self.d3),
                                 fills)
    for fill, out in zip(fills[1:], outs):
      self.assertArraysEqual(out, np.full(3, fill, np.float32))
      self.assertArraysEqual(np.signbit(out), np.signbit(np.full(3, fill)))
    self.assertTrue(np.isnan(outs[2]).all())

  @jtu.thread_unsafe_test()
  def test_new_eye_offset_does_not_compile(self):
    ks = [1, 1, 2, -1]
    outs = self.check_no_compile(lambda k: jnp.eye(4, k=k, device=self.d3), ks)
    for k, out in zip(ks[1:], outs):
      self.assertArraysEqual(out, np.eye(4, k=k, dtype=np.float32))


class UnusedCommittedArgumentTest(_DeviceTestCase):

  @_cases(kind=["single", "named"])
  def test_unused_argument_places_the_computation(self, kind):
    x3 = jax.device_put(_values((3,)), _sharding(kind, self.d3))
    out = jax.jit(lambda x, y: y * 2)(x3, 1.0)
    self.assertArraysEqual(out, np.float32(2.0))
    self.assertCommittedTo(out, self.d3)

  def test_with_a_used_uncommitted_argument(self):
    x3 = jax.device_put(_values((3,)), self.d3)
    out = jax.jit(lambda x, y: y * 2)(x3, jnp.arange(4.0))
    self.assertArraysEqual(out, 2 * np.arange(4.0, dtype=np.float32))
    self.assertCommittedTo(out, self.d3)

  def test_unused_pytree_leaf(self):
    x3 = jax.device_put(_values((3,)), self.d3)
    out = jax.jit(lambda tree, y: y * 2)({"a": x3, "b": 1}, 1.0)
    self.assertArraysEqual(out, np.float32(2.0))
    self.assertCommittedTo(out, self.d3)

  # Control: with keep_unused=True upstream already places it on d3.
  def test_keep_unused(self):
    x3 = jax.device_put(_values((3,)), self.d3)
    out = jax.jit(lambda x, y: y * 2, keep_unused=True)(x3, 1.0)
    self.assertArraysEqual(out, np.float32(2.0))
    self.assertCommittedTo(out, self.d3)

  def test_unused_arguments_on_two_devices(self):
    x3 = jax.device_put(1.0, self.d3)
    x5 = jax.device_put(1.0, self.d5)
    # The fix alone raises (as jit does when the two are used). A jit that may
    # span several devices may run it instead, committed to one of them; it
    # must not drop both, as upstream does (uncommitted, on the default device).
    try:
      out = jax.jit(lambda a, b, y: y * 2)(x3, x5, 1.0)
    except ValueError as e:
      self.assertIn("incompatible devices", str(e))
      return
    self.assertTrue(out.committed)
    self.assertIn(out.devices(), [{self.d3}, {self.d5}])


class DeviceArgumentMovesTest(_DeviceTestCase):

  @_cases(fn=["asarray", "array"], copy=[None, True],
          dtype=[None, np.float32, np.int32])
  def test_moves(self, fn, copy, dtype):
    x = _values((2, 3))
    x3 = jax.device_put(x, self.d3)
    kwargs = {} if copy is None else dict(copy=copy)
    out = getattr(jnp, fn)(x3, dtype=dtype, device=self.d5, **kwargs)
    self.assertArraysEqual(out, x if dtype is None else x.astype(dtype))
    self.assertCommittedTo(out, self.d5)
    self.assertArraysEqual(x3, x)
    self.assertCommittedTo(x3, self.d3)


_CREATE = {
    "zeros": lambda x, d: jnp.zeros(3, device=d),
    "ones": lambda x, d: jnp.ones(3, device=d),
    "full": lambda x, d: jnp.full(3, 2.0, device=d),
    "empty": lambda x, d: jnp.empty(3, device=d),
    "zeros_like": lambda x, d: jnp.zeros_like(x, device=d),
    "ones_like": lambda x, d: jnp.ones_like(x, device=d),
    "full_like": lambda x, d: jnp.full_like(x, 2.0, device=d),
    "empty_like": lambda x, d: jnp.empty_like(x, device=d),
    "arange": lambda x, d: jnp.arange(3, device=d),
    "linspace": lambda x, d: jnp.linspace(0.0, 1.0, 3, device=d),
    "asarray": lambda x, d: jnp.asarray(x, device=d),
    "array": lambda x, d: jnp.array(x, device=d),
    "eye": lambda x, d: jnp.eye(3, device=d),
    "astype": lambda x, d: jnp.astype(x, np.int32, device=d),
}

_HINTS = {"cpu:3": "jax.devices('cpu')[i]", 3: "jax.devices()[3]",
          "gpu": "jax.devices('gpu')[i]"}


class BadDeviceArgumentTest(_DeviceTestCase):

  @_cases(name=list(_CREATE), device=list(_HINTS))
  def test_bad_device(self, name, device):
    make = _CREATE[name]
    message = re.escape(
        "The `device` argument must be a jax.Device, a jax.sharding.Sharding "
        f"or None; got {device!r} of type {type(device).__name__}")
    x = jnp.arange(3.0)
    for f in (make, jax.jit(make, static_argnums=1)):
      with self.assertRaisesRegex(TypeError, message) as cm:
        f(x, device)
      self.assertIn(_HINTS[device], str(cm.exception))


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
