# Tests of "One trace for every device" (docs/design.md): a function is traced
# on abstract devices and lowered once for every assignment of devices to its
# arguments, and compiled per device; a trace that asked about its devices is
# reused only for devices that answer alike. Each kind of read is tested the
# same way: the function is called on one device, then on others, and every
# result must be where a fresh trace puts it, with the value a fresh trace
# computes. (tests/abstract_device_test.py has every public read path.)
#
# Written like JAX's own tests, on non-default devices (cpu:3, cpu:5).

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

import jax
from jax import lax
import jax.numpy as jnp
from jax._src import config
from jax._src import test_util as jtu

import device_test_util

config.parse_flags_with_absl()
jtu.request_cpu_devices(8)


_dev = device_test_util.dev


def _on(i, value=None):
  value = np.arange(4.0) if value is None else value
  return jax.device_put(value, _dev(i))


class TraceOnceTestCase(device_test_util.DeviceTestCase):

  def assertOn(self, x, device, committed=True):
    super().assertOn(x, device, committed)


class SharedTraceTest(TraceOnceTestCase):

  def test_one_trace_and_one_lowering_for_eight_devices(self):
    traces = []

    @jax.jit
    def f(x):
      traces.append(1)
      return jnp.sin(x) * 2 + x.sum()

    xs = [_on(i) for i in range(8)]
    with (jtu.count_jit_and_pmap_lowerings() as lowerings,
          jtu.count_jit_compilation_cache_miss() as compiles):
      outs = [f(x) for x in xs]
    self.assertLen(traces, 1)
    self.assertEqual(lowerings(), 1)
    self.assertEqual(compiles(), 8)  # compiles stay per device
    expected = np.sin(np.arange(4.0)) * 2 + 6.0
    for i, out in enumerate(outs):
      self.assertOn(out, _dev(i))
      self.assertAllClose(out, expected)

  def test_upstream_single_device_lowering_cache_hit_diff_devices(self):
    # pjit_test.py's test of the same name, which upstream passes.
    np_inp = np.arange(16).reshape(8, 2)
    arr1 = jax.device_put(np_inp, _dev(0))
    arr2 = jax.device_put(np_inp, _dev(1))

    @jax.jit
    def f(x):
      return x * 2

    with (jtu.count_pjit_cpp_cache_miss() as cpp_count,
          jtu.count_jit_and_pmap_lowerings() as lowering_count):
      out1, out2 = f(arr1), f(arr2)
    self.assertEqual(cpp_count(), 2)
    self.assertEqual(lowering_count(), 1)
    self.assertOn(out1, _dev(0))
    self.assertOn(out2, _dev(1))

  @jtu.thread_unsafe_test()  # changes config (device_tracing_show_devices)
  def test_shared_trace_shows_the_fresh_trace(self):
    def f(x, y):
      return jnp.cos(x) @ y, x - 1

    x, y = np.arange(6.0).reshape(2, 3), np.ones((3, 2))
    g = jax.jit(f)
    renamed = g.trace(_on(3, x), _on(3, y)).jaxpr
    g.trace(_on(5, x), _on(5, y))
    renamed = g.trace(_on(3, x), _on(3, y)).jaxpr  # from the shared entry
    fresh = jax.jit(lambda x, y: f(x, y)).trace(_on(3, x), _on(3, y)).jaxpr
    with config.device_tracing_show_devices(True):
      self.assertEqual(str(renamed), str(fresh))
    self.assertEqual(g.lower(_on(3, x), _on(3, y)).as_text(),
                     g.lower(_on(6, x), _on(6, y)).as_text())

  @device_test_util.needs_cross_device
  def test_arguments_sharing_a_device_are_one_pattern(self):
    traces = []

    @jax.jit
    def f(x, y):
      traces.append(1)
      return x * 2, y + 1

    for i, j in [(3, 3), (5, 5), (3, 5), (4, 6), (6, 4)]:
      a, b = f(_on(i), _on(j))
      self.assertOn(a, _dev(i))
      self.assertOn(b, _dev(j))
      self.assertAllClose(a, np.arange(4.0) * 2)
      self.assertAllClose(b, np.arange(4.0) + 1)
    # One trace for (d, d) and one for (d1, d2): several devices in one jit.
    self.assertLen(traces, 2)

  def test_uncommitted_arguments_in_computations_on_other_devices(self):
    traces = []

    @jax.jit
    def inner(x):
      traces.append(1)
      return x + jnp.ones(4)

    @jax.jit
    def outer(c, x):
      return inner(x) + c.sum()

    for i in (3, 5, 7):
      out = outer(_on(i), np.arange(4.0))
      self.assertOn(out, _dev(i))
      self.assertAllClose(out, np.arange(4.0) + 7.0)
    self.assertLen(traces, 1)

  def test_device_of_an_argument_passed_on_is_traced_once(self):
    inner_traces, outer_traces = [], []

    @jax.jit
    def inner(x):
      inner_traces.append(1)
      return jnp.cumsum(x) * x

    @jax.jit
    def outer(x):
      outer_traces.append(1)
      return inner(x) + jnp.zeros(4, device=x.device)  # asks nothing

    for i in range(8):
      out = outer(_on(i))
      self.assertOn(out, _dev(i))
      self.assertAllClose(out, np.cumsum(np.arange(4.0)) * np.arange(4.0))
    self.assertLen(outer_traces, 1)
    self.assertLen(inner_traces, 1)

  def test_nested_jits_of_an_outer_traced_per_device(self):
    # The outer function asks for its device's id: it is traced per device,
    # and so are the jits nested in it (their traces are on its devices).
    inner_traces, outer_traces = [], []

    @jax.jit
    def inner(x):
      inner_traces.append(1)
      return jnp.cumsum(x) * x

    @jax.jit
    def outer(x):
      outer_traces.append(1)
      return inner(x) + x.device.id

    for i in (3, 5, 3):
      out = outer(_on(i))
      self.assertOn(out, _dev(i))
      self.assertAllClose(out, np.cumsum(np.arange(4.0)) * np.arange(4.0) + i)
    self.assertLen(outer_traces, 2)
    self.assertLen(inner_traces, 2)

  def test_grad_inside_jit_traced_once(self):
    traces = []

    def loss(w, x):
      traces.append(1)
      return jnp.sum(jnp.tanh(x @ w) ** 2)

    g = jax.jit(jax.grad(loss))
    w, x = np.full((3, 3), 0.1), np.ones((2, 3))
    with jtu.count_jit_and_pmap_lowerings() as lowerings:
      outs = [g(_on(i, w), _on(i, x)) for i in (3, 5, 6)]
    self.assertLen(traces, 1)
    self.assertEqual(lowerings(), 1)
    expected = jax.grad(loss, argnums=0)(w, x)
    for i, out in zip((3, 5, 6), outs):
      self.assertOn(out, _dev(i))
      self.assertAllClose(out, expected)

  def test_eager_grad_and_vmap_of_a_shared_trace(self):
    traces = []

    @jax.jit
    def f(x):
      traces.append(1)
      return jnp.sum(jnp.tanh(x) ** 2)

    for i in (3, 5):
      g = jax.grad(f)(_on(i))
      self.assertOn(g, _dev(i))
      self.assertAllClose(g, 2 * np.tanh(np.arange(4.0)) /
                          np.cosh(np.arange(4.0)) ** 2)
      v = jax.vmap(f)(_on(i, np.ones((2, 4))))
      self.assertOn(v, _dev(i))
      self.assertAllClose(v, np.full(2, 4 * np.tanh(1.0) ** 2))
    self.assertLen(traces, 1)  # grad and vmap transform the one jaxpr


# Functions whose trace observes the device of an argument, each written so
# that the answer changes the program: reusing its trace on another device
# would give another value or another device than a fresh trace.
def _reads():
  d3 = lambda: _dev(3)

  def attr(x):
    return x + 1 if x.device == d3() else x - 1

  def devices(x):
    return x + 1 if d3() in x.devices() else x - 1

  def typeof(x):
    return x + 1 if jax.typeof(x).device == d3() else x - 1

  def platform(x):
    d = x.device
    return x + 1 if d.platform == "cpu" and d.id == 3 else x - 1

  def device_arg(x):
    return x + jnp.full(4, float(x.device.id), device=x.device)

  def uncommitted_read(x):
    y = jnp.arange(4.0)
    return x + (1 if y.device == d3() else -1)

  def nested_jit(x):
    return jax.jit(attr)(x) * 2

  def cond_branch(x):
    return lax.cond(True, attr, lambda x: x, x)

  def under_vmap(x):
    return jax.vmap(attr)(x[None])[0]

  def under_grad(x):
    return jax.grad(lambda x: jnp.sum(attr(x) * x))(x)

  def custom_jvp(x):
    f = jax.custom_jvp(attr)
    f.defjvp(lambda p, t: (attr(*p), t[0]))
    return f(x)

  return {f.__name__: f for f in (attr, devices, typeof, platform,
                                  device_arg, uncommitted_read, nested_jit,
                                  cond_branch, under_vmap, under_grad,
                                  custom_jvp)}


_READS = sorted(_reads())


class ObservedDeviceTest(TraceOnceTestCase):

  def _fresh(self, name, x):
    # A fresh function object: no cache of any kind holds its trace.
    f = _reads()[name]
    return jax.jit(lambda x: f(x))(x)

  @parameterized.named_parameters((name, name) for name in _READS)
  def test_a_read_keys_the_trace_on_its_devices(self, name):
    f = jax.jit(_reads()[name])
    for i in (3, 5, 4, 3):
      x = _on(i)
      out, expected = f(x), self._fresh(name, x)
      self.assertOn(out, _dev(i))
      self.assertArraysEqual(out, expected)

  @parameterized.named_parameters((name, name) for name in _READS)
  def test_a_cached_read_inside_another_trace_counts(self, name):
    # The read runs once, in the first trace of `inner`; the second outer
    # function reuses that trace from the cache, so it observed it too.
    inner = jax.jit(_reads()[name])
    jax.jit(lambda x: inner(x) * 3)(_on(3))
    g = jax.jit(lambda x: inner(x) * 2)
    for i in (3, 5):
      x = _on(i)
      out = g(x)
      self.assertOn(out, _dev(i))
      self.assertArraysEqual(out, self._fresh(name, x) * 2)

  def test_a_cached_read_in_a_cond_branch_inside_another_trace_counts(self):
    def branch(x):
      return x + 1 if x.device == _dev(3) else x - 1

    def keep(x):
      return x

    jax.jit(lambda x: lax.cond(True, branch, keep, x) * 3)(_on(3))
    g = jax.jit(lambda x: lax.cond(True, branch, keep, x) * 2)
    self.assertArraysEqual(g(_on(3)), (np.arange(4.0) + 1) * 2)
    out = g(_on(5))
    self.assertOn(out, _dev(5))
    self.assertArraysEqual(out, (np.arange(4.0) - 1) * 2)

  @device_test_util.needs_cross_device
  def test_fixed_device_put_keeps_its_device(self):
    f = jax.jit(lambda x: (jax.device_put(x, _dev(5)) * 2, x + 1))
    for i in (3, 4, 5, 6):
      moved, kept = f(_on(i))
      self.assertOn(moved, _dev(5))
      self.assertOn(kept, _dev(i))
      self.assertAllClose(moved, np.arange(4.0) * 2)

  def test_fixed_device_of_a_creation_function(self):
    f = jax.jit(lambda x: x + jnp.ones(4, device=_dev(3)))
    self.assertOn(f(_on(3)), _dev(3))
    # A fresh trace on cpu:5 meets two devices in one operation.
    with self.assertRaisesRegex(ValueError, "incompatible devices"):
      f(_on(5))

  def test_committed_constant_keeps_its_device(self):
    c = _on(3)
    f = jax.jit(lambda x: x + c)
    self.assertOn(f(_on(3)), _dev(3))
    with self.assertRaisesRegex(ValueError, "incompatible devices"):
      f(_on(5))

  @device_test_util.needs_cross_device
  def test_committed_constant_on_another_device_is_shared(self):
    c = _on(7)
    traces = []

    def f(x):
      traces.append(1)
      return x * 2, jax.device_put(c, _dev(7)) + 1

    g = jax.jit(f)
    for i in (3, 5):
      a, b = g(_on(i))
      self.assertOn(a, _dev(i))
      self.assertOn(b, _dev(7))
    self.assertLen(traces, 1)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
