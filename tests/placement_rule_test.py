# Tests of the placement rule (docs/design.md, "The placement rule") on the
# classes of input that the audit of issue 12 found misplaced: every sharding
# class of one device, every kind of fill value, multi-device device=,
# device= of an array committed elsewhere, the order of tracing, and
# transformations where eager mode and jit must agree. (Bad device arguments:
# tests/fixes_test.py, with the independent fix that gives their error.)
#
# Written like JAX's own tests, on non-default devices (cpu:3, cpu:5).

import math

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

import jax
from jax import lax
import jax.numpy as jnp
from jax.sharding import (Mesh, NamedSharding, PartitionSpec as P,
                          SingleDeviceSharding)
from jax._src import config
from jax._src import test_util as jtu

import device_test_util as dtu

config.parse_flags_with_absl()
jtu.request_cpu_devices(8)

_dev = dtu.dev


# Every form of a sharding whose device set is one device: each commits to it.
_ONE_DEVICE_SHARDINGS = {
    "single_device": lambda d: SingleDeviceSharding(d),
    "named_replicated": lambda d: NamedSharding(Mesh(np.array([d]), ("x",)),
                                                P()),
    "named_split": lambda d: NamedSharding(Mesh(np.array([d]), ("x",)),
                                           P("x")),
    "named_2d": lambda d: NamedSharding(Mesh(np.array([[d]]), ("x", "y")),
                                        P()),
    "single_device_memory_kind": lambda d: SingleDeviceSharding(
        d, memory_kind="device"),
}
_SHARDING_NAMES = sorted(_ONE_DEVICE_SHARDINGS)


def _one_device_sharding(name, d):
  return _ONE_DEVICE_SHARDINGS[name](d)


class PlacementRuleTestCase(dtu.DeviceTestCase):

  def assertBitwiseEqual(self, x, expected):
    x, expected = np.asarray(x), np.asarray(expected)
    self.assertEqual(x.dtype, expected.dtype)
    self.assertEqual(x.shape, expected.shape)
    self.assertEqual(x.tobytes(), expected.tobytes())


class OneDeviceShardingTest(PlacementRuleTestCase):
  """A committed value on one device, whatever its sharding class."""

  @parameterized.parameters(_SHARDING_NAMES)
  def test_array_device_under_jit(self, name):
    s = _one_device_sharding(name, _dev(3))
    x = jax.device_put(jnp.arange(4.0), s)
    self.assertEqual(x.device, _dev(3))
    self.assertTrue(x.committed)
    seen = []
    def f(x):
      seen.append(x.device)
      return jnp.zeros(2, device=x.device), x + jnp.ones(4, device=x.device)
    for fn in (f, jax.jit(f)):
      z, y = fn(x)
      self.assertOn(z, _dev(3), True)
      self.assertOn(y, _dev(3), True)
      self.assertArraysEqual(y, np.arange(4.0, dtype=np.float32) + 1)
    self.assertEqual(seen, [_dev(3), _dev(3)])

  @parameterized.parameters(_SHARDING_NAMES)
  def test_unused_argument_places_the_computation(self, name):
    x = jax.device_put(jnp.arange(4.0), _one_device_sharding(name, _dev(3)))
    self.assertOn(jax.jit(lambda x: jnp.zeros(2))(x), _dev(3), True)

  @parameterized.parameters(_SHARDING_NAMES)
  def test_device_put_and_creation_inside_jit(self, name):
    s = _one_device_sharding(name, _dev(5))
    u = jnp.arange(4.0)
    for f in (lambda u: jax.device_put(u, s) * 2,
              lambda u: jnp.zeros(4, device=s) + u,
              lambda u: jnp.asarray(u, device=s),
              lambda u: lax.with_sharding_constraint(u * 2, s)):
      self.assertOn(f(u), _dev(5), True)
      self.assertOn(jax.jit(f)(u), _dev(5), True)

  @parameterized.parameters(_SHARDING_NAMES)
  def test_jit_shardings_and_shape_dtype_struct(self, name):
    s = _one_device_sharding(name, _dev(3))
    u = jnp.arange(4.0)
    seen = []
    def f(x):
      seen.append(x.device)
      return x * 2
    self.assertOn(jax.jit(f, in_shardings=s)(u), _dev(3), True)
    self.assertOn(jax.jit(lambda x: x * 2, out_shardings=s)(u), _dev(3), True)
    self.assertEqual(seen, [_dev(3)])
    out = jax.eval_shape(f, jax.ShapeDtypeStruct((4,), jnp.float32,
                                                 sharding=s))
    self.assertEqual(out.sharding.device_set, {_dev(3)})
    self.assertEqual(jax.typeof(jax.device_put(u, s)).device, _dev(3))

  @parameterized.parameters(n for n in _SHARDING_NAMES if n != "named_split")
  def test_random_key(self, name):
    # (A key is a scalar: a split spec does not apply to it.)
    key = jax.device_put(jax.random.key(0), _one_device_sharding(name, _dev(3)))
    for f in (lambda k: jax.random.normal(k, (3,)),
              jax.jit(lambda k: jax.random.normal(k, (3,)))):
      self.assertOn(f(key), _dev(3), True)


# Fill values of every kind, with the dtype each is given.
_FILL_VALUES = [
    ("zero", 0.0, None), ("negative_zero", -0.0, None),
    ("nan", math.nan, None), ("inf", math.inf, None),
    ("negative_inf", -math.inf, None), ("int", 7, None),
    ("int_zero", 0, None), ("int_one", 1, None), ("true", True, None),
    ("false", False, None), ("huge_int_float", 2**40, jnp.float32),
    ("int32_min", -2**31, jnp.int32), ("complex", 1 - 2j, None),
    ("negative_zero_complex", complex(-0.0, -0.0), None),
    ("numpy_negative_zero", np.float32(-0.0), None),
    ("numpy_int8", np.int8(-5), None), ("bool_as_float", True, jnp.float32),
    ("negative_zero_as_int", -0.0, jnp.int32),
]


class FillValueTest(PlacementRuleTestCase):
  """A fill value is data: never a static argument, never confused."""

  @parameterized.named_parameters(
      (name, value, dtype) for name, value, dtype in _FILL_VALUES)
  @jtu.thread_unsafe_test()  # changes config
  def test_full_is_the_value_eagerly_and_under_jit(self, value, dtype):
    d = _dev(3)
    # The oracle is JAX without device tracing (upstream's code paths): the
    # same values, dtypes and weak types, or the same error.
    x = jax.device_put(jnp.ones(3, jnp.float32 if dtype is None else dtype),
                       d)
    for f in (lambda x: jnp.full(3, value, dtype=dtype, device=d),
              lambda x: jnp.full_like(x, value, dtype=dtype),
              lambda x: jnp.full_like(x, value, dtype=dtype, device=d)):
      for run in (f, jax.jit(f)):
        try:
          with config.device_tracing(False):
            expected = run(x)
        except Exception as e:  # pylint: disable=broad-except
          with self.assertRaises(type(e)):
            run(x)
          continue
        out = run(x)
        self.assertBitwiseEqual(out, expected)
        self.assertEqual(out.weak_type, expected.weak_type)
        self.assertOn(out, d, True)

  def test_equal_values_do_not_share_a_result(self):
    d = _dev(3)
    x = jax.device_put(jnp.ones(2), d)
    for a, b in ((0.0, -0.0), (1, True), (0, False), (1.0, True)):
      self.assertBitwiseEqual(jnp.full(2, a, device=d), np.full(2, a,
                              jnp.full(2, a).dtype))
      self.assertBitwiseEqual(jnp.full(2, b, device=d), np.full(2, b,
                              jnp.full(2, b).dtype))
      self.assertBitwiseEqual(jnp.full_like(x, b), np.full(2, b, np.float32))

  def test_many_values_compile_once(self):
    d = _dev(3)
    x = jax.device_put(jnp.ones(3), d)
    def calls(v, k):
      return (jnp.full(3, v, device=d), jnp.full_like(x, v),
              jnp.full(3, math.nan, device=d), jnp.eye(3, k=k, device=d))
    calls(0.5, 0), calls(0.5, 1)   # warm up: eye's default offset 0 is a
                                   # constant of a program of its own
    results = []
    with jtu.count_jit_compilation_cache_miss() as compiles:
      for i in range(20):
        results.append((float(i) + 0.25, i % 3, calls(float(i) + 0.25, i % 3)))
    self.assertEqual(compiles(), 0)
    for v, k, (a, b, c, e) in results:
      self.assertArraysEqual(a, np.full(3, v, np.float32))
      self.assertArraysEqual(b, np.full(3, v, np.float32))
      self.assertTrue(np.isnan(np.asarray(c)).all())
      self.assertArraysEqual(e, np.eye(3, k=k, dtype=np.float32))

  @parameterized.parameters(-4, -1, 0, 1, 2, 2**40)
  def test_eye_offset(self, k):
    d = _dev(5)
    for f in (lambda: jnp.eye(3, 4, k=k, device=d),
              jax.jit(lambda: jnp.eye(3, 4, k=k, device=d))):
      self.assertBitwiseEqual(f(), np.eye(3, 4, k=min(k, 2**31 - 1),
                                          dtype=np.float32))
      self.assertOn(f(), d, True)


class MultiDeviceArgumentTest(PlacementRuleTestCase):
  """device= with a sharding over several devices is honoured under jit."""

  @parameterized.named_parameters(
      ("zeros", lambda s: jnp.zeros(4, device=s)),
      ("ones", lambda s: jnp.ones((4, 2), device=s)),
      ("full", lambda s: jnp.full(4, -0.0, device=s)),
      ("zeros_like", lambda s: jnp.zeros_like(jnp.ones(4), device=s)),
      ("full_like", lambda s: jnp.full_like(jnp.ones(4), 3.0, device=s)),
      ("empty_like", lambda s: jnp.empty_like(jnp.ones(4), device=s) * 0),
      ("lax_full", lambda s: lax.full((4,), 2.0, sharding=s)),
  )
  def test_eager_and_jit_agree(self, make):
    mesh = Mesh(np.array([_dev(2), _dev(5)]), ("x",))
    s = NamedSharding(mesh, P("x"))
    eager = make(s)
    jitted = jax.jit(lambda: make(s))()
    self.assertEqual(eager.sharding, s)
    self.assertTrue(jitted.sharding.is_equivalent_to(eager.sharding,
                                                     eager.ndim))
    self.assertArraysEqual(jitted, eager)


class DeviceArgumentMovesTest(PlacementRuleTestCase):
  """device= moves an array committed elsewhere (the array API)."""

  @parameterized.named_parameters(
      ("asarray", lambda x, d: jnp.asarray(x, device=d)),
      ("array", lambda x, d: jnp.array(x, device=d)),
      ("asarray_named", lambda x, d: jnp.asarray(
          x, device=NamedSharding(Mesh(np.array([d]), ("x",)), P()))),
      ("array_dtype", lambda x, d: jnp.array(x, dtype=jnp.int32, device=d)),
  )
  @dtu.needs_cross_device
  def test_eager_and_jit_move(self, make):
    x = jax.device_put(jnp.arange(3.0), _dev(1))
    eager = make(x, _dev(5))
    jitted = jax.jit(lambda x: make(x, _dev(5)))(x)
    self.assertArraysEqual(eager, np.arange(3.0), check_dtypes=False)
    for out in (eager, jitted):
      self.assertOn(out, _dev(5), True)
      self.assertArraysEqual(out, eager)
    self.assertOn(x, _dev(1), True)


class TracingOrderTest(PlacementRuleTestCase):
  """Placement is a function of the data flow, not of tracing order."""

  @dtu.needs_cross_device
  def test_swapping_independent_transfers(self):
    u = jnp.arange(3.0)
    def f(u):
      return jax.device_put(u, _dev(1)), jax.device_put(u, _dev(2)), u * 2
    def g(u):
      b = jax.device_put(u, _dev(2))
      a = jax.device_put(u, _dev(1))
      return a, b, u * 2
    outs_f, outs_g = jax.jit(f)(u), jax.jit(g)(u)
    eager = f(u)
    for outs in (outs_f, outs_g):
      self.assertEqual([o.devices() for o in outs],
                       [e.devices() for e in eager])
      self.assertArraysEqual(outs[2], eager[2])
    # With a committed argument, uncommitted work goes with it, whatever the
    # order of the transfers.
    x = jax.device_put(jnp.arange(3.0), _dev(5))
    h1 = jax.jit(lambda x, u: (jax.device_put(u, _dev(1)),
                               jax.device_put(u, _dev(2)), u * 2 + x))
    h2 = jax.jit(lambda x, u: (jax.device_put(u, _dev(2)),
                               jax.device_put(u, _dev(1)), u * 2 + x))
    self.assertOn(h1(x, u)[2], _dev(5), True)
    self.assertOn(h2(x, u)[2], _dev(5), True)

  @dtu.needs_cross_device
  def test_device_read_agrees_with_where_the_value_lands(self):
    seen = []
    def f(u):
      seen.append(u.device)
      return jax.device_put(u, _dev(1)), jax.device_put(u, _dev(2)), u * 2
    outs = jax.jit(f)(jnp.arange(3.0))
    self.assertEqual(outs[2].devices(), {seen[-1]})


class TransformationsTest(PlacementRuleTestCase):

  def test_custom_vjp_backward_sees_the_primal_device(self):
    seen = []
    @jax.custom_vjp
    def f(x):
      return x * 2
    def fwd(x):
      return f(x), None
    def bwd(_, g):
      seen.append(g.device)
      return (g * 2 + jnp.zeros(g.shape, device=g.device),)
    f.defvjp(fwd, bwd)
    x = jax.device_put(jnp.float32(1.0), _dev(3))
    eager = jax.grad(f)(x)
    jitted = jax.jit(jax.grad(f))(x)
    self.assertEqual(seen, [_dev(3), _dev(3)])
    for out in (eager, jitted):
      self.assertOn(out, _dev(3), True)
      self.assertEqual(float(out), 2.0)

  @dtu.needs_cross_device
  def test_checkpoint_around_a_transfer(self):
    x = jax.device_put(jnp.arange(3.0), _dev(3))
    f = lambda x: jax.checkpoint(lambda v: jax.device_put(v, _dev(5)) * 2)(x)
    eager, jitted = f(x), jax.jit(f)(x)
    self.assertOn(eager, _dev(5), True)
    self.assertOn(jitted, _dev(5), True)
    self.assertArraysEqual(jitted, eager)
    g = jax.grad(lambda x: jax.device_put(jnp.sum(f(x)), _dev(3)))
    self.assertOn(g(x), _dev(3), True)
    self.assertOn(jax.jit(g)(x), _dev(3), True)
    self.assertArraysEqual(jax.jit(g)(x), g(x))


class HomeDeviceTest(PlacementRuleTestCase):
  """Reads of `x.device` agree with where values land, at every level."""

  @dtu.needs_cross_device
  def test_read_before_a_second_source(self):
    # After one source inside, the home device looks decided; a second
    # source on another device undecides it: the read is traced again.
    seen = []
    def f(a, b):
      x = jnp.zeros(3)
      y = jax.device_put(a, _dev(1))
      seen.append(x.device)
      return x, y, jax.device_put(b, _dev(2))
    u = jnp.ones(3)
    x, y, z = jax.jit(f)(u, u)
    self.assertEqual(x.devices(), {seen[-1]})
    self.assertEqual(seen[-1], self.default_device())
    self.assertOn(y, _dev(1), True)
    self.assertOn(z, _dev(2), True)

  def default_device(self):
    return jax.devices()[0]

  @dtu.needs_cross_device
  @parameterized.parameters(False, True)
  def test_nested_read_does_not_depend_on_call_order(self, outer_first):
    seen = []
    @jax.jit
    def inner(a):
      x = jnp.zeros(3)
      seen.append(x.device)
      return x, jax.device_put(a, _dev(1)) + 1
    outer = jax.jit(lambda a, b: (*inner(a), jax.device_put(b, _dev(2))))
    u = jnp.ones(3)
    calls = [lambda: outer(u, u)[0], lambda: inner(u)[0]]
    for call in (calls if outer_first else calls[::-1]):
      x = call()
      # inner's only source is cpu:1: x lands there, as eagerly, and the
      # read (of the trace that was kept) said so.
      self.assertEqual(x.devices(), {_dev(1)})
      self.assertEqual(seen[-1], _dev(1))
    self.assertEqual(inner(u)[0].devices(), {_dev(1)})

  @dtu.needs_cross_device
  def test_transformed_jaxpr_keeps_the_argument_home(self):
    c = jax.device_put(jnp.ones(3), _dev(1))
    seen = []
    @jax.jit
    def f(a, b):
      x = jnp.zeros(3)
      seen.append(x.device)
      return x, a * c, b * 2
    a = jax.device_put(jnp.ones((1, 3)), _dev(1))
    b = jax.device_put(jnp.ones((1, 3)), _dev(2))
    x, _, _ = jax.vmap(f)(a, b)
    self.assertEqual(x.devices(), {_dev(1)})
    self.assertEqual(seen[-1], _dev(1))

  @dtu.needs_cross_device
  def test_nested_calls_with_operands_on_two_devices(self):
    @jax.jit
    def inner(a, b):
      return a + 1, jax.device_put(b, _dev(1)) * 2
    a = jax.device_put(jnp.ones(3), _dev(1))
    b = jax.device_put(jnp.ones(3), _dev(2))
    for f in (lambda a, b: inner(a, b),
              jax.checkpoint(lambda a, b: (a + 1, b + 1))):
      eager = f(a, b)
      jitted = jax.jit(f)(a, b)
      for o, e in zip(jitted, eager):
        self.assertEqual(o.devices(), e.devices())
        self.assertArraysEqual(o, e)

  @dtu.needs_cross_device
  @parameterized.parameters("custom_jvp", "custom_vjp")
  def test_custom_rule_whose_result_is_moved(self, kind):
    if kind == "custom_jvp":
      g = jax.custom_jvp(lambda x: jnp.sin(jax.device_put(x, _dev(2))))
      g.defjvp(lambda p, t: (g(p[0]), jax.device_put(t[0], _dev(2))))
    else:
      g = jax.custom_vjp(lambda x: jnp.sin(jax.device_put(x, _dev(2))))
      g.defvjp(lambda x: (g(x), x), lambda x, ct: (ct.to_device(x.device),))
    x = jax.device_put(jnp.ones(3), _dev(1))
    self.assertOn(g(x), _dev(2), True)
    self.assertOn(jax.jit(g)(x), _dev(2), True)
    self.assertEqual(jax.jit(g).trace(x).out_info.sharding.device_set,
                     {_dev(2)})


class CopySemanticsTest(PlacementRuleTestCase):

  def test_array_copies_a_value_already_on_the_device(self):
    s = NamedSharding(Mesh(np.array([_dev(1)]), ("x",)), P())
    x = jax.device_put(jnp.arange(3.0), s)
    y = jnp.array(x, device=_dev(1))
    self.assertNotEqual(y.unsafe_buffer_pointer(), x.unsafe_buffer_pointer())
    jax.jit(lambda a: a + 1, donate_argnums=0)(y)
    self.assertFalse(x.is_deleted())
    self.assertArraysEqual(x, np.arange(3.0, dtype=np.float32))

  @parameterized.parameters("full_like", "zeros_like", "ones_like")
  @jtu.thread_unsafe_test()  # changes config
  def test_like_of_a_weakly_typed_array(self, name):
    w = jax.device_put(jax.jit(lambda: 1.0)(), _dev(3))
    f = {"full_like": lambda: jnp.full_like(w, 2.5, device=_dev(3)),
         "zeros_like": lambda: jnp.zeros_like(w, device=_dev(3)),
         "ones_like": lambda: jnp.ones_like(w, device=_dev(3))}[name]
    with config.device_tracing(False):
      expected = f()
    out = f()
    self.assertEqual(out.weak_type, expected.weak_type)
    self.assertBitwiseEqual(out, expected)
    self.assertOn(out, _dev(3), True)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
