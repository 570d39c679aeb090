# Tests of abstract devices (docs/design.md, "Abstract devices"): a jitted
# function is traced with an abstract device for each device of its committed
# arguments, and a trace is reused for other devices exactly when they answer
# alike what the trace asked about its devices. The tests call each function
# on cpu:3, then cpu:5, then cpu:3 again, and compare every result with eager
# JAX on that device: values, device and committed flag.
#
# The reads are every public way a traced function can see the device or
# sharding of a traced argument; the uses feed what it read into arithmetic,
# a Python branch and a device_put. None of them may leak the first call's
# device into the trace reused for the next.

import contextlib
import pickle

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

import jax
from jax import lax
import jax.numpy as jnp
from jax._src import config
from jax._src import core
from jax._src import test_util as jtu

import device_test_util

config.parse_flags_with_absl()
jtu.request_cpu_devices(8)

_dev = device_test_util.dev


def _on(i, value=None):
  value = np.arange(4.0) if value is None else value
  return jax.device_put(value, _dev(i))


def _identity(a):
  return a * 1


def _device_of(obj):
  """The device a read names: a device, or the one device of a sharding."""
  if isinstance(obj, (jax.ShapeDtypeStruct, jax.Array)):
    obj = obj.sharding
  if isinstance(obj, jax.sharding.Sharding):
    obj, = obj.device_set
  return obj


def _reads():
  """name -> function of a (traced or eager) array that names its device."""
  return {
      "device": lambda x: x.device,
      "devices": lambda x: next(iter(x.devices())),
      "typeof_device": lambda x: jax.typeof(x).device,
      "aval_device": lambda x: x.aval.device,
      "shaped_abstractify_device": lambda x: core.shaped_abstractify(x).device,
      "eval_shape": lambda x: jax.eval_shape(_identity, x),
      "jit_eval_shape": lambda x: jax.jit(_identity).eval_shape(x),
      "make_jaxpr_return_shape": lambda x: jax.make_jaxpr(
          _identity, return_shape=True)(x)[1],
      "make_jaxpr_in_avals": lambda x: jax.make_jaxpr(_identity)(x)
          .in_avals[0].device,
      "make_jaxpr_out_avals": lambda x: jax.make_jaxpr(_identity)(x)
          .out_avals[0].device,
      "make_jaxpr_invars": lambda x: jax.make_jaxpr(_identity)(x)
          .jaxpr.invars[0].aval.device,
      "trace_out_info": lambda x: jax.jit(_identity).trace(x).out_info,
      "trace_jaxpr": lambda x: jax.jit(_identity).trace(x).jaxpr
          .in_avals[0].device,
      "lower_in_avals": lambda x: jax.jit(_identity).lower(x)
          .in_avals[0][0].device,
      "compile_input_shardings": lambda x: jax.jit(_identity).lower(x)
          .compile().input_shardings[0][0],
      "compile_output_shardings": lambda x: jax.jit(_identity).lower(x)
          .compile().output_shardings,
      "shape_dtype_struct": lambda x: jax.ShapeDtypeStruct(
          x.shape, x.dtype, sharding=jax.eval_shape(_identity, x).sharding),
  }


def _uses():
  """name -> function of an array and the device read from it."""
  d3 = lambda: _dev(3)
  return {
      "arithmetic": lambda x, d: x * d.id,
      "branch": lambda x, d: x + 1 if d == d3() else x - 1,
      "device_put": lambda x, d: jax.device_put(x * 2, d),
      "dict_key": lambda x, d: x * {d3(): 10.0}.get(d, 1.0),
      "str": lambda x, d: x + float(str(d)[-1]),
      "repr": lambda x, d: x + float(repr(d)[-2]),
      "format": lambda x, d: x + float(f"{d}"[-1]),
      "local_hardware_id": lambda x, d: x + d.local_hardware_id,
  }


_READS = sorted(_reads())
_USES = sorted(_uses())


class AbstractDeviceTestCase(device_test_util.DeviceTestCase):

  def assertLikeEager(self, f, *, devices=(3, 5, 3)):
    """jit(f) on each device gives what f gives eagerly there."""
    g = jax.jit(f)
    for i in devices:
      x = _on(i)
      expected = f(x)
      out = g(x)
      self.assertArraysEqual(out, expected)
      self.assertEqual(out.devices(), expected.devices())
      self.assertEqual(out.committed, expected.committed)


class ReadPathTest(AbstractDeviceTestCase):

  @parameterized.product(read=_READS, use=_USES)
  def test_a_read_is_answered_for_the_call(self, read, use):
    read_fn, use_fn = _reads()[read], _uses()[use]
    self.assertLikeEager(lambda x: use_fn(x, _device_of(read_fn(x))))

  @parameterized.named_parameters((r, r) for r in _READS)
  def test_eagerly_a_read_names_the_array_device(self, read):
    for i in (3, 5):
      self.assertEqual(_device_of(_reads()[read](_on(i))), _dev(i))

  @parameterized.parameters(
      "id", "platform", "device_kind", "process_index", "host_id", "task_id",
      "local_hardware_id", "client")
  def test_each_attribute_of_the_device(self, name):
    d3 = _dev(3)
    self.assertLikeEager(
        lambda x: x + 1 if getattr(x.device, name) == getattr(d3, name)
        else x - 1)

  @parameterized.parameters("default_memory", "addressable_memories")
  def test_each_method_of_the_device(self, name):
    d3 = _dev(3)
    self.assertLikeEager(
        lambda x: x + 1 if str(getattr(x.device, name)()) ==
        str(getattr(d3, name)()) else x - 1)

  def test_memory(self):
    self.assertLikeEager(
        lambda x: x + float(str(x.device.memory("device").addressable_by_devices()[0])[-1]))

  def test_devices_of_two_arguments(self):
    def f(x, y):
      return x + 1 if x.device == y.device else x - 1
    g = jax.jit(f)
    pairs = ((3, 3), (3, 5), (5, 5), (4, 6), (3, 3))
    if not device_test_util.CROSS_DEVICE:  # one device per computation
      pairs = tuple((i, j) for i, j in pairs if i == j)
    for i, j in pairs:
      x, y = _on(i), _on(j)
      self.assertArraysEqual(g(x, y), f(x, y))

  def test_printing_shows_devices_when_asked(self):
    seen = []

    @jax.jit
    def f(x):
      seen.append(str(jax.typeof(x)))
      return x

    with config.device_tracing_show_devices(True):
      for i in (3, 5, 3):
        f(_on(i))
    self.assertEqual(seen, ["float32[4]@cpu:3", "float32[4]@cpu:5"])
    # Hidden by default, as upstream prints avals; that asks nothing.
    seen.clear()
    g = jax.jit(lambda x: seen.append(str(jax.typeof(x))) or x)
    for i in (3, 5, 3):
      g(_on(i))
    self.assertEqual(seen, ["float32[4]"])

  def test_inspect_array_sharding(self):
    seen = []
    f = jax.jit(lambda x: jax.debug.inspect_array_sharding(
        x, callback=lambda s: seen.append(_device_of(s))) or x * 2)
    for i in (3, 5):
      self.assertOn(f(_on(i)), _dev(i), True)
    self.assertEqual(seen, [_dev(3), _dev(5)])

  def test_a_read_in_a_nested_jit_cached_by_another_function(self):
    inner = jax.jit(lambda x: x * x.device.id)
    jax.jit(lambda x: inner(x) + 1)(_on(3))  # caches inner's trace
    self.assertLikeEager(lambda x: inner(x) * 2, devices=(3, 5, 3))


class ReuseTest(AbstractDeviceTestCase):

  def test_one_trace_one_lowering_eight_compiles(self):
    traces = []

    @jax.jit
    def f(x):
      traces.append(1)
      # Shapes, dtypes and device= of an argument's device ask nothing.
      n = jax.typeof(x).shape[0]
      return x * n + jnp.zeros(x.shape, x.dtype, device=x.device)

    with (jtu.count_jit_and_pmap_lowerings() as lowerings,
          jtu.count_jit_compilation_cache_miss() as compiles):
      outs = [f(_on(i)) for i in range(8)]
    self.assertLen(traces, 1)
    self.assertEqual(lowerings(), 1)
    self.assertEqual(compiles(), 8)
    for i, out in enumerate(outs):
      self.assertOn(out, _dev(i), True)
      self.assertArraysEqual(out, np.arange(4.0) * 4)

  def test_a_read_of_the_id_traces_per_device(self):
    traces = []

    @jax.jit
    def f(x):
      traces.append(1)
      return x * x.device.id

    for i in (3, 5, 3, 5, 6):
      self.assertArraysEqual(f(_on(i)), np.arange(4.0) * i)
    self.assertLen(traces, 3)

  def test_an_equality_question_is_shared_by_the_devices_that_answer_it(self):
    traces = []
    d5 = _dev(5)

    @jax.jit
    def f(x):
      traces.append(1)
      return x + 1 if x.device == d5 else x - 1

    for i in (3, 4, 6, 5, 3, 5):
      expected = np.arange(4.0) + (1 if i == 5 else -1)
      self.assertArraysEqual(f(_on(i)), expected)
    self.assertLen(traces, 2)  # one trace for "not cpu:5", one for cpu:5

  def test_the_platform_is_part_of_the_pattern(self):
    traces = []

    @jax.jit
    def f(x):
      traces.append(1)
      return x + 1 if x.device.platform == "cpu" else x - 1

    for i in range(4):
      self.assertArraysEqual(f(_on(i)), np.arange(4.0) + 1)
    self.assertLen(traces, 1)

  def test_make_jaxpr_on_each_device(self):
    f = lambda x: x * 2
    for i in (3, 5, 3):
      jaxpr = jax.make_jaxpr(f)(_on(i))
      self.assertEqual(jaxpr.in_avals[0].device, _dev(i))
      self.assertIs(type(jaxpr.in_avals[0].device), type(_dev(i)))
      with config.device_tracing_show_devices(True):
        self.assertIn(f"f32[4]@cpu:{i}", str(jaxpr))

  def test_eager_grad_and_vmap(self):
    traces = []

    @jax.jit
    def f(x):
      traces.append(1)
      return jnp.sum(jnp.tanh(x) ** 2)

    for i in (3, 5):
      g = jax.grad(f)(_on(i))
      self.assertOn(g, _dev(i), True)
      v = jax.vmap(f)(_on(i, np.ones((2, 4))))
      self.assertOn(v, _dev(i), True)
    self.assertLen(traces, 1)  # grad and vmap transform the one trace


class NoUnwindingTest(AbstractDeviceTestCase):
  """Reads and commits inside code that catches BaseException, runs finally
  blocks, context managers and generators: as eagerly, or a clear error."""

  def _bodies(self):
    d5 = _dev(5)

    def bare_except(x):
      a = jnp.ones(3, device=x.device)
      try:
        b = jax.device_put(x, d5)
      except:  # noqa: E722
        return a, 0
      return a + b, 1

    def base_exception(x):
      a = jnp.ones(3, device=x.device)
      try:
        b = jax.device_put(x, d5)
      except BaseException:
        return a, 0
      return a + b, 1

    def suppress(x):
      a, b, which = jnp.ones(3, device=x.device), x, 0
      with contextlib.suppress(BaseException):
        b = jax.device_put(x, d5)
        which = 1
      return a + b, which

    log = []

    def finally_block(x):
      try:
        a = jnp.ones(3, device=x.device)
        b = jax.device_put(x, d5)
      finally:
        log.append(1)
      return a + b, 1

    @contextlib.contextmanager
    def ctx():
      yield

    def with_block(x):
      with ctx():
        a = jnp.ones(3, device=x.device)
        b = jax.device_put(x, d5)
      return a + b, 1

    def generator(x):
      def gen():
        yield jnp.ones(3, device=x.device)
        yield jax.device_put(x, d5)
      a, b = gen()
      return a + b, 1

    return dict(bare_except=bare_except, base_exception=base_exception,
                suppress=suppress, finally_block=finally_block,
                with_block=with_block, generator=generator)

  @parameterized.parameters(
      "bare_except", "base_exception", "suppress", "finally_block",
      "with_block", "generator")
  def test_the_try_block_runs(self, body):
    # One device per computation: cpu:5 decides it, so the function is
    # traced again with `x.device` answering cpu:5, after the first trace
    # returned; nothing unwinds the user's code to do so.
    f = self._bodies()[body]
    u = jnp.arange(3.0)  # uncommitted: its device is read before cpu:5
    with device_test_util.one_device_per_computation():
      out, which = jax.jit(f)(u)
    self.assertEqual(int(which), 1)
    self.assertOn(out, _dev(5), True)
    self.assertArraysEqual(out, np.arange(3.0) + 1)

  @parameterized.parameters(
      "bare_except", "base_exception", "suppress", "finally_block",
      "with_block", "generator")
  @device_test_util.needs_cross_device
  def test_across_devices_as_eagerly(self, body):
    # Several devices in one computation: `x.device` answers the default
    # device, as eagerly, and the values meet on two devices, as eagerly.
    f = self._bodies()[body]
    u = jnp.arange(3.0)
    with self.assertRaisesRegex(ValueError, "incompatible devices"):
      f(u)
    with self.assertRaisesRegex(ValueError, "incompatible devices"):
      jax.jit(f)(u)

  @parameterized.product(
      transform=["jit", "grad", "vmap", "scan", "cond", "checkpoint",
                 "custom_jvp", "custom_vjp", "custom_vjp_optimize_remat"],
      cross_device=[True, False])
  def test_under_each_transformation(self, transform, cross_device):
    if cross_device and not device_test_util.CROSS_DEVICE:
      self.skipTest("needs the series' second step")
    d5 = _dev(5)

    def body(x):
      try:
        z = jnp.zeros(x.shape, device=x.device)
        y = jax.device_put(x, d5)
      except BaseException:  # never taken: nothing is raised for a retrace
        raise AssertionError("unwound")
      return jnp.sum(jnp.sin(y) + z)

    def custom(optimize_remat=False, kind="vjp"):
      if kind == "jvp":
        f = jax.custom_jvp(body)
        f.defjvp(lambda p, t: (body(*p), jnp.sum(t[0])))
        return f
      f = jax.custom_vjp(body)
      f.defvjp(lambda x: (body(x), None), lambda _, g: (g * jnp.ones(3),),
               optimize_remat=optimize_remat)
      return f

    fns = {
        "jit": jax.jit(body),
        "grad": jax.grad(body),
        "vmap": lambda x: jax.vmap(body)(x[None])[0],
        "scan": lambda x: lax.scan(lambda c, v: (c + body(v), None), 0.0,
                                   x[None])[0],
        "cond": lambda x: lax.cond(True, body, lambda v: v.sum(), x),
        "checkpoint": jax.checkpoint(body),
        "custom_jvp": custom(kind="jvp"),
        "custom_vjp": jax.grad(custom()),
        "custom_vjp_optimize_remat": jax.grad(custom(optimize_remat=True)),
    }
    f = fns[transform]
    flag = (config.device_tracing_cross_device(cross_device)
            if device_test_util.CROSS_DEVICE else contextlib.nullcontext())
    u = jnp.arange(3.0)
    with flag:
      try:
        out = jax.jit(f)(u)
      except (ValueError, TypeError) as e:  # a clear, ordinary error
        self.assertNotIsInstance(e, AssertionError)
        self.assertRegex(str(e), "cpu:5|device ids \\[5\\]")
        return
    # One device per computation, decided by cpu:5 (where eagerly z would
    # be on the default device and meet y on cpu:5: an error).
    self.assertEqual(out.devices(), {d5})
    self.assertAllClose(out, jax.jit(lambda v: jnp.sum(jnp.sin(v)))(u)
                        if transform in ("jit", "vmap", "scan", "cond",
                                         "checkpoint", "custom_jvp")
                        else jnp.cos(u) if transform == "grad" else out)


class AvalTest(AbstractDeviceTestCase):

  def test_typeof_is_upstreams_function(self):
    self.assertIs(jax.typeof, core.typeof)
    self.assertIs(pickle.loads(pickle.dumps(jax.typeof)), jax.typeof)

  def test_typematch_compares_committed_devices(self):
    a = core.ShapedArray((3,), np.float32)
    self.assertTrue(core.typematch(a.update(device=_dev(3)),
                                   a.update(device=_dev(3))))
    self.assertFalse(core.typematch(a.update(device=_dev(3)),
                                    a.update(device=_dev(5))))
    # An uncommitted value follows the computation: it matches any device.
    self.assertTrue(core.typematch(a, a.update(device=_dev(5))))
    self.assertIn("committed devices do not match (cpu:3 and cpu:5)",
                  core.aval_mismatch_extra(a.update(device=_dev(3)),
                                           a.update(device=_dev(5))))

  def test_update_pickling_and_shape_dtype_struct_keep_the_device(self):
    a = core.ShapedArray((3,), np.float32, device=_dev(3))
    self.assertEqual(a.update(shape=(4,)).device, _dev(3))
    self.assertEqual(pickle.loads(pickle.dumps(a)).device, _dev(3))
    sds = jax.ShapeDtypeStruct(
        (3,), np.float32, sharding=jax.sharding.SingleDeviceSharding(_dev(3)))
    self.assertEqual(core.shaped_abstractify(sds).device, _dev(3))

  def test_abstract_device_in_a_trace(self):
    seen = {}

    @jax.jit
    def f(x):
      seen["type"] = type(x.device)
      seen["typeof"] = jax.typeof(x).device is x.device
      seen["platform"] = x.device.platform
      seen["pickled"] = pickle.loads(pickle.dumps(jax.typeof(x))).device
      return x

    f(_on(3))
    self.assertIs(seen["type"], core.AbstractDevice)
    self.assertTrue(seen["typeof"])
    self.assertEqual(seen["platform"], "cpu")
    self.assertEqual(seen["pickled"], _dev(3))

  @jtu.thread_unsafe_test()  # changes config
  def test_a_cache_miss_explanation_shows_the_devices(self):
    c3, c5 = _on(3), _on(5)
    f = lambda x: x * 2
    with (config.explain_cache_misses(True),
          self.assertLogs(level="WARNING") as cm):
      jax.make_jaxpr(lambda: jax.lax.cond(True, f, f, c3))()
      jax.make_jaxpr(lambda: jax.lax.cond(True, f, f, c5))()
    text = "\n".join(cm.output)
    self.assertIn("f32[4]@cpu:5", text)
    self.assertIn("f32[4]@cpu:3", text)

  def test_core_imports_no_placement_code(self):
    import ast
    import inspect
    tree = ast.parse(inspect.getsource(core))
    imported = {a.name for n in ast.walk(tree)
                if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names}
    self.assertNotIn("device_tracing", imported)
    self.assertNotIn("device_stages", imported)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
