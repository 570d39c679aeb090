# Tests of device tracing: the committed device in abstract values.
#
# Written like JAX's own tests, so that they could be dropped into upstream's
# tests/ folder (as tests/device_tracing_test.py).

import copy
import os
import pickle

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

import jax
import jax.experimental  # for io_callback
from jax import lax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P, SingleDeviceSharding
from jax._src import config
from jax._src import core
from jax._src import device_tracing
from jax._src import test_util as jtu

import device_test_util as dtu

config.parse_flags_with_absl()
jtu.request_cpu_devices(8)

_dev = dtu.dev


class ReproducerTest(dtu.InputsTestCase):
  """jax-ml/jax#26000 itself."""

  def test_device_attribute_under_jit(self):
    f = jax.jit(lambda x: jnp.zeros(0, device=x.device))
    self.assertOn(f(self.x3), self.d3, True)
    # As eagerly: an uncommitted x is on the default device, and device=
    # commits the result to it.
    self.assertOn(f(self.u), self.d0, True)
    self.assertOn(jnp.zeros(0, device=self.u.device), self.d0, True)

  def test_devices_method_under_jit(self):
    seen = []
    def f(x):
      seen.append(x.devices())
      return jnp.zeros(1, device=next(iter(x.devices())))
    self.assertOn(jax.jit(f)(self.x3), self.d3, True)
    self.assertEqual(seen, [{self.d3}])

  def test_hasattr_and_getattr(self):
    jax.jit(lambda x: self.assertTrue(hasattr(x, "device")) or x)(self.x3)
    jax.jit(lambda x: self.assertEqual(getattr(x, "device", None), self.d3)
            or x)(self.x3)

  def test_to_device(self):
    out = jax.jit(lambda x: x.to_device(self.d2))(self.u)
    self.assertOn(out, self.d2, True)


class AvalTest(dtu.InputsTestCase):

  def test_typeof_committed_array(self):
    self.assertEqual(jax.typeof(self.x3).device, self.d3)
    self.assertIsNone(jax.typeof(self.u).device)
    self.assertIsNone(jax.typeof(np.arange(3.0)).device)
    self.assertIsNone(jax.typeof(1.0).device)

  def test_jit_outputs_carry_their_device(self):
    out = jax.jit(lambda x: x + 1)(self.x3)
    self.assertEqual(jax.typeof(out).device, self.d3)
    out = jax.jit(lambda x: x + 1)(self.u)
    self.assertIsNone(jax.typeof(out).device)

  def test_eager_op_results(self):
    self.assertEqual(jax.typeof(self.x3 + 1).device, self.d3)
    self.assertEqual(jax.typeof(jnp.sum(self.x3)).device, self.d3)
    self.assertIsNone(jax.typeof(self.u + 1).device)

  def test_device_is_interned_and_updated(self):
    a = core.ShapedArray((3,), np.float32, device=self.d3)
    self.assertIs(a, core.ShapedArray((3,), np.float32, device=self.d3))
    self.assertIsNot(a, core.ShapedArray((3,), np.float32))
    self.assertEqual(a.update(shape=(4,)).device, self.d3)
    self.assertIsNone(a.update(device=None).device)
    self.assertEqual(a.to_tangent_aval().device, self.d3)
    self.assertEqual(a.to_ct_aval().device, self.d3)
    self.assertEqual(a.update_weak_type(True).device, self.d3)
    self.assertEqual(a.strip_weak_type().device, self.d3)

  def test_device_is_not_part_of_typematch(self):
    a = core.ShapedArray((3,), np.float32, device=self.d3)
    b = core.ShapedArray((3,), np.float32)
    self.assertTrue(core.typematch(a, b))
    self.assertTrue(core.typecompat(a, b))

  def test_vmap_mapping_keeps_the_device(self):
    a = core.ShapedArray((5, 3), np.float32, device=self.d3)
    m = core.mapped_aval(5, 0, a)
    self.assertEqual(m.device, self.d3)
    self.assertEqual(core.unmapped_aval(5, 0, m).device, self.d3)

  def test_extended_dtype_physical_aval_keeps_the_device(self):
    key = jax.device_put(jax.random.key(0), self.d3)
    aval = jax.typeof(key)
    self.assertEqual(aval.device, self.d3)
    self.assertEqual(core.physical_aval(aval).device, self.d3)

  def test_pickle_and_copy(self):
    a = core.ShapedArray((3,), np.float32, device=self.d3)
    for b in (pickle.loads(pickle.dumps(a)), copy.deepcopy(a)):
      self.assertEqual(b.device, self.d3)
      self.assertEqual((b.shape, b.dtype), (a.shape, a.dtype))
    b = pickle.loads(pickle.dumps(core.ShapedArray((3,), np.float32)))
    self.assertIsNone(b.device)

  @jtu.thread_unsafe_test()  # changes config
  def test_printing_unchanged_unless_opted_in(self):
    a = core.ShapedArray((3,), np.float32, device=self.d3)
    self.assertEqual(str(a), "float32[3]")
    jaxpr = jax.make_jaxpr(lambda x: x * 2)(self.x3)
    self.assertNotIn("cpu", str(jaxpr))
    with config.device_tracing_show_devices(True):
      self.assertEqual(str(a), "float32[3]@cpu:3")
      self.assertIn("f32[3]@cpu:3", str(jax.make_jaxpr(lambda x: x * 2)(self.x3)))

  def test_shape_dtype_struct_with_single_device_sharding(self):
    sds = jax.ShapeDtypeStruct((3,), jnp.float32,
                               sharding=SingleDeviceSharding(self.d3))
    self.assertEqual(jax.typeof(sds).device, self.d3)
    seen = []
    out = jax.eval_shape(lambda x: seen.append(x.device) or x * 2, sds)
    self.assertEqual(seen, [self.d3])
    self.assertEqual(out.sharding, SingleDeviceSharding(self.d3))
    jaxpr = jax.make_jaxpr(lambda x: jnp.zeros(2, device=x.device))(sds)
    self.assertEqual(jaxpr.out_avals[0].device, self.d3)

  def test_eval_shape_of_committed_arguments(self):
    out = jax.eval_shape(lambda x: jnp.zeros(2) + x.sum(), self.x3)
    self.assertEqual(out.sharding, SingleDeviceSharding(self.d3))
    out = jax.eval_shape(lambda x: x * 2, self.u)
    self.assertIsNone(out.sharding)


def _record(seen, name):
  def f(v):
    seen.setdefault(name, []).append(v.device)
    return v
  return f


@jax.custom_jvp
def _cj(x):
  return jnp.sin(x)
_cj.defjvp(lambda p, t: (_cj(p[0]), jnp.cos(p[0]) * t[0]))


@jax.custom_vjp
def _cv(x):
  return jnp.sin(x)
_cv.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))


def _transformations(seen):
  """Each runs `r` (records x.device inside) on an array input."""
  r = _record(seen, "in")
  sq = lambda v: (r(v) ** 2).sum()
  return {
      "vmap": lambda x: jax.vmap(lambda v: r(v) * 2)(x),
      "grad": lambda x: jax.grad(sq)(x),
      "value_and_grad": lambda x: jax.value_and_grad(sq)(x)[1],
      "vjp": lambda x: jax.vjp(lambda v: r(v) * 2, x)[1](x)[0],
      "jvp": lambda x: jax.jvp(lambda v: r(v) * 2, (x,), (x,))[1],
      "linearize": lambda x: jax.linearize(lambda v: r(v) * 2, x)[1](x),
      "jacfwd": lambda x: jax.jacfwd(lambda v: r(v) ** 2)(x),
      "jacrev": lambda x: jax.jacrev(lambda v: r(v) ** 2)(x),
      "hessian": lambda x: jax.hessian(lambda v: (r(v) ** 3).sum())(x),
      "cond": lambda x: lax.cond(True, lambda v: r(v) + 1, lambda v: r(v) - 1,
                                 x),
      "switch": lambda x: lax.switch(1, [lambda v: r(v), lambda v: r(v) * 2],
                                     x),
      "while_loop": lambda x: lax.while_loop(
          lambda c: r(c[1]) < 3, lambda c: (c[0] + x, c[1] + 1),
          (jnp.zeros_like(x), jnp.int32(0)))[0],
      "fori_loop": lambda x: lax.fori_loop(
          0, 3, lambda i, c: r(c) + x, jnp.zeros_like(x)),
      "scan": lambda x: lax.scan(lambda c, t: (r(c) + t, r(t) * 2),
                                 jnp.zeros(()), x)[1],
      "remat": lambda x: jax.grad(jax.checkpoint(
          lambda v: jnp.sin(r(v)).sum()))(x),
      "custom_jvp": lambda x: jax.grad(lambda v: _cj(r(v)).sum())(x),
      "custom_vjp": lambda x: jax.grad(lambda v: _cv(r(v)).sum())(x),
      "nested_jit": lambda x: jax.jit(lambda v: r(v) + jnp.ones(3))(x),
      "pure_callback": lambda x: jax.pure_callback(
          lambda a: np.asarray(a), jax.ShapeDtypeStruct((3,), jnp.float32),
          r(x)),
      "io_callback": lambda x: jax.experimental.io_callback(
          lambda a: np.asarray(a), jax.ShapeDtypeStruct((3,), jnp.float32),
          r(x)),
      "vmap_of_grad": lambda x: jax.vmap(jax.grad(lambda v: r(v) ** 2))(x),
      "grad_of_scan": lambda x: jax.grad(lambda v: lax.scan(
          lambda c, t: (c + r(t) ** 2, None), 0.0, v)[0])(x),
      "scan_of_grad": lambda x: lax.scan(
          lambda c, t: (c + jax.grad(lambda s: r(s) ** 2)(t), None),
          0.0, x)[0],
      "vmap_of_jit_of_cond": lambda x: jax.vmap(jax.jit(lambda v: lax.cond(
          v > 0, lambda s: r(s), lambda s: -r(s), v)))(x),
  }


class TransformationsTest(dtu.InputsTestCase):

  @parameterized.product(
      transformation=sorted(_transformations({})),
      committed=[True, False],
      under_jit=[True, False])
  def test_device_inside_transformation(self, transformation, committed,
                                        under_jit):
    seen = {}
    f = _transformations(seen)[transformation]
    if under_jit:
      f = jax.jit(f)
    x = self.x3 if committed else self.u
    out = f(x)
    expected = self.d3 if committed else self.d0
    self.assertNotEmpty(seen["in"])
    self.assertEqual(set(seen["in"]), {expected})
    for leaf in jax.tree.leaves(out):
      self.assertEqual(leaf.devices(), {expected})
      if under_jit:
        self.assertEqual(leaf.committed, committed)
    want = _transformations({})[transformation](np.arange(3.0, dtype=np.float32))
    jax.tree.map(lambda a, b: self.assertAllClose(a, b, rtol=1e-5), out, want)

  @parameterized.named_parameters(
      ("scan", lambda x: lax.scan(lambda c, _: (c + x, None),
                                  jnp.zeros_like(x), None, length=3)[0]),
      ("while_loop", lambda x: lax.while_loop(
          lambda c: c[1] < 3, lambda c: (c[0] + x, c[1] + 1),
          (jnp.zeros_like(x), 0))[0]),
      ("fori_loop", lambda x: lax.fori_loop(
          0, 3, lambda i, c: c + x, jnp.zeros_like(x))),
  )
  def test_uncommitted_carry_joins_a_committed_update(self, f):
    # The carry starts uncommitted (zeros_like) and is updated with x
    # (committed): no carry type error, and the result joins to x's device.
    seen = []
    def g(x):
      out = f(x)
      seen.append(jax.typeof(out).device)
      return out
    out = jax.jit(g)(self.x3)
    self.assertEqual(seen, [self.d3])
    self.assertOn(out, self.d3, True)
    self.assertAllClose(out, 3 * np.arange(3.0))

  def test_tangents_and_cotangents_follow_their_primal(self):
    seen = {}
    def f(x):
      y, t = jax.jvp(lambda v: v * 2, (x,), (jnp.ones_like(x),))
      seen["tangent"] = jax.typeof(t).device
      _, pullback = jax.vjp(lambda v: v * 2, x)
      ct, = pullback(jnp.ones(3))
      seen["cotangent"] = jax.typeof(ct).device
      return y
    jax.jit(f)(self.x3)
    self.assertEqual(seen, {"tangent": self.d3, "cotangent": self.d3})

  def test_random_and_sort(self):
    def f(x):
      k = jax.random.key(0)
      r = jax.random.normal(k, (3,))
      self.assertEqual(r.device, self.d3)   # uncommitted: the computation's
      return jnp.sort(r + x)
    self.assertOn(jax.jit(f)(self.x3), self.d3, True)

  @jtu.thread_unsafe_test()  # changes config
  def test_default_device_context(self):
    with jax.default_device(_dev(6)):
      seen = []
      out = jax.jit(lambda x: seen.append(x.device) or x * 2)(self.u)
    self.assertEqual(seen, [_dev(6)])
    self.assertOn(out, _dev(6), False)

  def test_eager_transformations_of_uncommitted_values(self):
    self.assertEqual(jax.vmap(lambda v: self.assertEqual(v.device, self.d0)
                              or v)(self.u).devices(), {self.d0})


class ShardMapTest(dtu.InputsTestCase):

  def test_per_device_body_has_no_committed_device(self):
    mesh = jax.make_mesh((8,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))
    seen = []
    def body(b):
      seen.append((jax.typeof(b).device, getattr(b, "device", None)))
      return lax.psum(b, "i")
    x = jax.device_put(jnp.arange(8.0), NamedSharding(mesh, P("i")))
    out = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("i"),
                                out_specs=P()))(x)
    self.assertEqual(seen, [(None, None)])
    self.assertAllClose(out, np.array([28.0]))

  def test_body_over_a_one_device_mesh_has_no_committed_device(self):
    # A mesh of one device, cpu:3, and an operand committed there: the body
    # is still per device, so its values are not committed to cpu:3 (their
    # `.device` is where the body runs), and the result is assembled on the
    # mesh, where eager mode puts it.
    mesh = jax.sharding.Mesh(np.array([self.d3]), ("i",))
    seen = []
    def body(b):
      seen.append((jax.typeof(b).device, getattr(b, "device", None)))
      return b * 2
    f = jax.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    out = jax.jit(f)(self.x3)
    self.assertEqual(seen, [(None, self.d3)])
    self.assertEqual(out.devices(), {self.d3})
    self.assertAllClose(out, np.arange(3.0) * 2)
    self.assertAllClose(out, f(self.x3))

  def test_multi_device_computation_keeps_upstream_semantics(self):
    mesh = jax.make_mesh((8,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))
    x = jax.device_put(jnp.arange(8.0), NamedSharding(mesh, P("i")))
    seen = []
    out = jax.jit(lambda v: seen.append(getattr(v, "device", None)) or v * 2)(x)
    self.assertEqual(seen, [None])
    with self.assertRaisesRegex(AttributeError, "'device' attribute is not "
                                "available .*(mesh of 8 devices|several)"):
      jax.jit(lambda v: v.device)(x)
    self.assertEqual(out.sharding, x.sharding)


class ConflictErrorTest(dtu.InputsTestCase):

  def test_arguments_on_two_devices_meeting(self):
    a = jax.device_put(1.0, _dev(1))
    b = jax.device_put(2.0, _dev(2))
    def f(a, b):
      return a + b
    with self.assertRaises(device_tracing.DeviceConflictError) as cm:
      jax.jit(f)(a, b)
    msg = str(cm.exception)
    self.assertIn("Received incompatible devices for jitted computation", msg)
    self.assertIn("argument a of f", msg)
    self.assertIn("argument b of f", msg)
    self.assertIn("device ids [1]", msg)
    self.assertIn("device ids [2]", msg)
    self.assertRegex(msg, r"called at .*device_tracing_test\.py:\d+")
    self.assertIsInstance(cm.exception, ValueError)

  def test_eager_mismatch_error_is_upstream_s(self):
    a = jax.device_put(jnp.ones(3), _dev(1))
    b = jax.device_put(jnp.ones(3), _dev(2))
    with self.assertRaisesRegex(
        ValueError,
        r"Received incompatible devices for jitted computation. Got argument "
        r"x of add with shape float32\[3\] and with device ids \[1\] on "
        r"platform CPU .*and argument y of add with shape float32\[3\] and "
        r"with device ids \[2\] on platform CPU"):
      a + b


class CacheTest(dtu.InputsTestCase):

  def test_trace_cache_keys_on_devices(self):
    seen = []
    @jax.jit
    def f(x):
      seen.append(x.device)
      return jnp.zeros(2, device=x.device) + x.sum()
    x0 = jax.device_put(jnp.arange(3.0), self.d0)
    for x in (x0, self.x3, self.u, x0, self.x3, self.u):
      out = f(x)
      self.assertEqual(out.devices(), x.devices())
      self.assertTrue(out.committed)  # device= commits it
    # One trace for committed arguments, on an abstract device that asks
    # nothing about the concrete one (device= of it asks nothing), and one
    # for uncommitted arguments, on the default device.
    self.assertLen(seen, 2)
    self.assertIsInstance(seen[0], core.AbstractDevice)
    self.assertIs(seen[1], self.d0)
    # A question about the device keys the trace on the answer.
    seen.clear()
    g = jax.jit(lambda x: seen.append(x.device.id) or x * 2)
    for x in (x0, self.x3, x0, self.x3):
      g(x)
    self.assertEqual(seen, [0, 3])

  def test_steady_state_calls_stay_on_the_cpp_fast_path(self):
    f = jax.jit(lambda x, y: x * y + 1)
    for x in (self.x3, self.u):
      f(x, x)  # warm up
      with jtu.count_pjit_cpp_cache_miss() as misses:
        for _ in range(100):
          f(x, x)
      self.assertEqual(misses(), 0)

  def test_nested_jit_is_traced_once_per_computation_device(self):
    inner_traces = []
    @jax.jit
    def inner(v):
      inner_traces.append(v.device)
      return v * 2
    outer = jax.jit(lambda x: inner(jnp.ones(3)) + x)
    outer(self.x3)
    outer(self.u)
    outer(self.x3)
    self.assertEqual(inner_traces, [self.d3, self.d0])


class StaleObservationTest(dtu.InputsTestCase):

  @parameterized.named_parameters(
      ("work_after_the_move", lambda x: jax.device_put(x, _dev(5)) * 2),
      ("work_before_the_move", lambda x: jax.device_put(x * 2, _dev(5))),
  )
  def test_reading_device_before_a_device_put_decides_it(self, move):
    seen = []
    def f(x):
      seen.append(x.device)    # uncommitted: not decided yet
      return move(x)
    out = jax.jit(f)(self.u)
    self.assertOn(out, _dev(5), True)
    # Traced again, knowing the computation device: what the trace saw is
    # where the value lands.
    self.assertEqual(seen[-1], _dev(5))

  @dtu.needs_cross_device
  def test_device_read_inside_a_cond_branch(self):
    # The branch reads v.device of an uncommitted value and commits ones to
    # it: the default device, as eagerly. The computation then holds values
    # on two devices and no committed argument, so its home device is the
    # default device and nothing is traced again: jit agrees with eager mode.
    seen = []
    def f(x):
      y = lax.cond(True, lambda v: v + jnp.ones(3, device=v.device),
                   lambda v: v, x)
      seen.append(y.device)
      return y, jax.device_put(y, _dev(4))
    y, out = jax.jit(f)(self.u)
    self.assertEqual(seen, [self.d0])
    self.assertOn(y, self.d0, True)
    self.assertOn(out, _dev(4), True)
    y_eager, out_eager = f(self.u)
    self.assertOn(y_eager, self.d0, True)
    self.assertOn(out_eager, _dev(4), True)
    self.assertArraysEqual(out, out_eager)

  def test_device_read_in_a_branch_then_the_only_source(self):
    # One committed source in the computation: it decides the home device,
    # so the read inside the branch is traced again with it.
    seen = []
    def branch(v):
      seen.append(v.device)
      return v + 1
    def f(x):
      y = lax.cond(True, branch, lambda v: v, x)
      return jax.device_put(x, _dev(4)) * 2, y
    out, y = jax.jit(f)(self.u)
    self.assertEqual(seen[-1], _dev(4))
    self.assertOn(out, _dev(4), True)
    self.assertOn(y, _dev(4), True)


class SwitchTest(dtu.InputsTestCase):

  @jtu.thread_unsafe_test()  # changes config
  def test_off_is_upstream_with_the_independent_fixes(self):
    with config.device_tracing(False):
      self.assertIsNone(jax.typeof(self.x3).device)
      with self.assertRaisesRegex(AttributeError, "'device' attribute is not "
                                  "available"):
        jax.jit(lambda x: x.device)(self.x3)
      self.assertFalse(jax.jit(lambda x: hasattr(x, "device") and 1)(self.x3))
      # An upstream misplacement (docs/jep/26000-device-tracing.md,
      # Motivation): device= under jit is dropped.
      self.assertOn(jax.jit(lambda x: jnp.zeros(3, device=self.d2))(self.u),
                    self.d0, False)
      # The independent fixes are not behind the switch: an unused committed
      # argument places the computation (upstream: cpu:0, uncommitted).
      self.assertOn(jax.jit(lambda x: jnp.zeros(0))(self.x3), self.d3, True)
      jaxpr = jax.make_jaxpr(lambda x: jax.device_put(x, self.d2))(self.u)
      self.assertIsNone(jaxpr.out_avals[0].device)

  @jtu.thread_unsafe_test()  # changes config
  def test_switch_is_part_of_the_jit_key(self):
    traces = []
    f = jax.jit(lambda x: traces.append(1) or jnp.zeros(3, device=self.d2))
    self.assertOn(f(self.u), self.d2, True)
    with config.device_tracing(False):
      self.assertOn(f(self.u), self.d0, False)
    self.assertOn(f(self.u), self.d2, True)
    self.assertLen(traces, 2)


class ExportTest(dtu.InputsTestCase):

  def test_exported_avals_carry_no_device(self):
    from jax import export
    exp = export.export(jax.jit(lambda x: jnp.sin(x) * 2))(self.x3)
    self.assertIsNone(exp.in_avals[0].device)
    self.assertIsNone(exp.out_avals[0].device)

  @parameterized.named_parameters(
      ("committed_argument", lambda self: self.x3, lambda x: jnp.sin(x) * 2),
      ("device_put_inside", lambda self: self.u,
       lambda x: jax.device_put(x, _dev(2)) * 2),
  )
  @jtu.thread_unsafe_test()  # changes config
  def test_serialization_is_that_of_upstream(self, arg, f):
    from jax import export
    a = arg(self)
    out = []
    for on in (True, False):  # from one line, so that locations are the same
      with config.device_tracing(on):
        out.append(export.export(jax.jit(f))(a).serialize())
    exported, upstream = out
    self.assertEqual(exported, upstream)
    out = export.deserialize(exported).call(self.x3)
    self.assertOn(out, self.d3, True)


_EXPORT_SCRIPT = """
import sys
import jax, jax.numpy as jnp
from jax import export
jax.config.update("jax_num_cpu_devices", 8)
x = jax.device_put(jnp.arange(3.0), jax.devices()[3])
def f(x):
  return jnp.sin(x) * 2 + jnp.zeros(3)
sys.stdout.buffer.write(export.export(jax.jit(f))(x).serialize())
"""


class ExportAgainstUpstreamTest(jtu.JaxTestCase):

  def test_serialization_is_byte_identical_to_upstream_jax(self):
    import subprocess
    import sys
    import tempfile
    from pathlib import Path
    upstream = (Path(__file__).resolve().parent.parent / ".venv-upstream" /
                "bin" / "python")
    if not upstream.exists():
      self.skipTest("no .venv-upstream (run ./setup.sh)")
    with tempfile.TemporaryDirectory() as tmp:
      script = Path(tmp) / "export_case.py"  # same path and lines for both
      script.write_text(_EXPORT_SCRIPT)
      env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
      out = [subprocess.run([str(py), str(script)], capture_output=True,
                            env=env, check=True).stdout
             for py in (sys.executable, upstream)]
    fork, up = out
    self.assertNotEmpty(fork)
    self.assertEqual(fork, up)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
