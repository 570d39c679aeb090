# Tests of placement under jit: device= and device_put are honoured, the
# computation device is decided before DCE, and conflicts are clear errors.
#
# Written like JAX's own tests, so that they could be dropped into upstream's
# tests/ folder (as tests/placement_test.py).

import inspect
import types
import unittest
import warnings

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

import jax
from jax import lax
import jax.numpy as jnp
from jax.sharding import SingleDeviceSharding
from jax._src import config
from jax._src import device_tracing
from jax._src import test_util as jtu

import device_test_util as dtu

try:
  import hypothesis
  from hypothesis import strategies as st
except ImportError:  # the property tests skip without it
  hypothesis = st = None

config.parse_flags_with_absl()
jtu.request_cpu_devices(8)

_dev = dtu.dev


# Every creation call of jax.numpy and lax that takes a device, and every
# form of device_put. Each makes a (3,)-shaped value from `x` (a float32[3])
# on `device`.
CREATORS = {
    "zeros": lambda x, d: jnp.zeros(3, device=d),
    "ones": lambda x, d: jnp.ones(3, device=d),
    "full": lambda x, d: jnp.full(3, 2.0, device=d),
    "full_of_array": lambda x, d: jnp.full(3, x[0], device=d),
    "empty": lambda x, d: jnp.empty(3, device=d) * 0,
    "zeros_like": lambda x, d: jnp.zeros_like(x, device=d),
    "ones_like": lambda x, d: jnp.ones_like(x, device=d),
    "full_like": lambda x, d: jnp.full_like(x, 7.0, device=d),
    "full_like_of_array": lambda x, d: jnp.full_like(x, x[1], device=d),
    "empty_like": lambda x, d: jnp.empty_like(x, device=d) * 0,
    "arange": lambda x, d: jnp.arange(3, device=d),
    "arange_float": lambda x, d: jnp.arange(0.0, 1.5, 0.5, device=d),
    "linspace": lambda x, d: jnp.linspace(0.0, 1.0, 3, device=d),
    "eye": lambda x, d: jnp.eye(3, device=d)[0],
    "asarray": lambda x, d: jnp.asarray(x, device=d),
    "asarray_of_numpy": lambda x, d: jnp.asarray(np.ones(3, np.float32),
                                                 device=d),
    "asarray_of_list": lambda x, d: jnp.asarray([1.0, 2.0, 3.0], device=d),
    "array": lambda x, d: jnp.array(x, device=d),
    "array_of_numpy": lambda x, d: jnp.array(np.ones(3, np.float32), device=d),
    "astype": lambda x, d: jnp.astype(x, jnp.int32, device=d),
    "from_dlpack": lambda x, d: jnp.from_dlpack(np.ones(3, np.float32),
                                                device=d),
    "lax_full": lambda x, d: lax.full((3,), 1.0,
                                      sharding=SingleDeviceSharding(d)),
    "device_put": lambda x, d: jax.device_put(x, d),
    "device_put_sharding": lambda x, d: jax.device_put(
        x, SingleDeviceSharding(d)),
    "to_device": lambda x, d: x.to_device(d),
    "with_sharding_constraint": lambda x, d: lax.with_sharding_constraint(
        x, SingleDeviceSharding(d)),
}

# jax.numpy functions that take `device=` are all in CREATORS. (logspace,
# geomspace, identity, tri, frombuffer and fromfunction take no device= in
# jax 0.12; their results are uncommitted and follow the computation.)
_DEVICE_FREE_CREATORS = {
    "logspace": lambda x: jnp.logspace(0.0, 1.0, 3),
    "geomspace": lambda x: jnp.geomspace(1.0, 4.0, 3),
    "identity": lambda x: jnp.identity(3)[0],
    "tri": lambda x: jnp.tri(3)[0],
    "fromfunction": lambda x: jnp.fromfunction(lambda i: i * 1.0, (3,)),
}


def _uses_device(name, d, x):
  # Evaluated at trace time: d is a device, or "like" for x.device.
  return x.device if d == "like" else d


def _contexts():
  """Ways to run `f(x) -> array` under jit; each returns f's result(s)."""
  return {
      "jit": lambda f: jax.jit(f),
      "nested_jit": lambda f: jax.jit(lambda x: jax.jit(f)(x)),
      "vmap": lambda f: jax.jit(lambda x: jax.vmap(
          lambda r: f(r), in_axes=0, out_axes=0)(jnp.stack([x, x]))[0]),
      "grad": lambda f: jax.jit(lambda x: (
          jax.grad(lambda v: (f(v).astype(jnp.float32) * v).sum())(x),
          f(x))[1]),
      "scan": lambda f: jax.jit(lambda x: lax.scan(
          lambda c, r: (c, f(r)), 0.0, jnp.stack([x, x]))[1][0]),
  }


class CreationTest(dtu.InputsTestCase):

  def test_the_table_covers_every_jnp_function_with_a_device(self):
    with_device = set()
    for name in dir(jnp):
      fn = getattr(jnp, name)
      try:
        params = inspect.signature(fn).parameters
      except (TypeError, ValueError):
        continue
      if "device" in params:
        with_device.add(name)
    covered = {n.split("_of_")[0].removesuffix("_float") for n in CREATORS}
    self.assertEmpty(with_device - covered, "creation functions not tested")
    for name in _DEVICE_FREE_CREATORS:
      self.assertNotIn("device", inspect.signature(getattr(jnp, name)).parameters)

  @parameterized.product(creator=sorted(CREATORS), context=sorted(_contexts()))
  def test_device_is_honoured_as_eagerly(self, creator, context):
    make = CREATORS[creator]
    run = _contexts()[context]
    # device=x.device, x committed to cpu:3, and device=cpu:2, x uncommitted.
    for x, target, pick in ((self.x3, self.d3, lambda v: v.device),
                            (self.u, self.d2, lambda v: self.d2)):
      eager = make(x, target)
      self.assertOn(eager, target, True)
      seen = []
      def f(v):
        out = make(v, pick(v))
        seen.append(out.device)
        return out
      out = run(f)(x)
      self.assertEqual(set(seen), {target})
      self.assertOn(out, target, True)
      self.assertAllClose(out, eager)

  @parameterized.parameters(sorted(_DEVICE_FREE_CREATORS))
  def test_creation_without_device_follows_the_computation(self, creator):
    make = _DEVICE_FREE_CREATORS[creator]
    self.assertOn(jax.jit(lambda x: make(x) + x)(self.x3), self.d3, True)
    self.assertOn(jax.jit(make)(self.x3), self.d3, True)
    self.assertOn(jax.jit(make)(self.u), self.d0, False)

  def test_empty_like_under_jit_no_longer_crashes(self):
    out = jax.jit(lambda x: jnp.empty_like(x, device=self.d2))(self.u)
    self.assertOn(out, self.d2, True)
    self.assertEqual(out.shape, (3,))

  @jtu.thread_unsafe_test()  # changes config
  def test_creation_on_another_device_than_a_committed_argument(self):
    f = lambda x: (jnp.zeros(3, device=self.d2), x * 2)
    with dtu.one_device_per_computation():
      with self.assertRaises(device_tracing.DeviceConflictError):
        jax.jit(f)(self.x3)
    if not dtu.CROSS_DEVICE:
      return
    # Across devices, as eagerly (tests/cross_device_test.py).
    zeros, x2 = jax.jit(f)(self.x3)
    self.assertOn(zeros, self.d2, True)
    self.assertOn(x2, self.d3, True)


class ComputationDeviceTest(dtu.InputsTestCase):

  def test_out_shardings_of_one_device_decide_the_device_read(self):
    seen = []
    f = jax.jit(lambda x: seen.append(x.device) or x * 2,
                out_shardings=SingleDeviceSharding(_dev(6)))
    out = f(self.u)
    self.assertEqual(seen, [_dev(6)])
    self.assertOn(out, _dev(6), True)
    self.assertAllClose(out, self.u * 2)

  def test_jit_device_argument_decides_the_device_read(self):
    seen = []
    with warnings.catch_warnings():
      warnings.simplefilter("ignore", DeprecationWarning)  # jit's device=
      f = jax.jit(lambda x: seen.append(x.device) or x * 2, device=_dev(5))
      out = f(self.u)
    self.assertEqual(seen, [_dev(5)])
    self.assertOn(out, _dev(5), True)
    self.assertAllClose(out, self.u * 2)

  def test_unused_committed_argument_decides(self):
    out = jax.jit(lambda x: jnp.zeros(0))(self.x3)
    self.assertOn(out, self.d3, True)

  def test_unused_argument_pruned_by_dce_among_used_ones(self):
    out = jax.jit(lambda x, y: y * 2)(self.x3, self.u)
    self.assertOn(out, self.d3, True)
    self.assertAllClose(out, 2 * np.arange(3.0))

  def test_where_with_created_branches(self):
    f = jax.jit(lambda x: jnp.where(x > 0, jnp.zeros(1), jnp.ones(1)))
    self.assertOn(f(self.x3), self.d3, True)

  def test_committed_closed_over_constant_decides(self):
    c3 = jax.device_put(jnp.ones(3), self.d3)
    out = jax.jit(lambda y: y + c3)(self.u)
    self.assertOn(out, self.d3, True)
    scalar = jax.device_put(jnp.float32(2.0), self.d3)
    self.assertOn(jax.jit(lambda y: y * scalar)(self.u), self.d3, True)

  def test_constant_that_the_trace_does_not_use_does_not_decide(self):
    c3 = jax.device_put(jnp.ones(3), self.d3)
    def f(y, use):
      return y + c3 if use else y * 2
    self.assertOn(jax.jit(f, static_argnums=1)(self.u, False), self.d0, False)
    self.assertOn(jax.jit(f, static_argnums=1)(self.u, True), self.d3, True)

  def test_discarded_device_put_decides(self):
    def f(x):
      jax.device_put(x, self.d2)  # result unused
      return x * 2
    self.assertOn(jax.jit(f)(self.u), self.d2, True)

  def test_uncommitted_computation_stays_uncommitted(self):
    out = jax.jit(lambda x: jnp.sin(x) + jnp.zeros(3))(self.u)
    self.assertOn(out, self.d0, False)

  def test_every_output_lands_on_the_computation_device(self):
    out = jax.jit(lambda x: (x, jnp.zeros(2), x.sum(), 1.0))(self.x3)
    for o in out:
      self.assertOn(o, self.d3, True)


class ConflictTest(dtu.InputsTestCase):
  """Errors of a computation that runs on one device.

  With jax_device_tracing_cross_device on (the default), values on different
  devices may be in one computation as long as they do not meet; the tests
  of values that never meet run with it off. tests/cross_device_test.py
  tests them with it on.
  """

  @jtu.thread_unsafe_test()  # changes config
  @dtu.one_device_per_computation()
  def test_device_put_to_another_device_inside_jit(self):
    a1 = jax.device_put(1.0, _dev(1))
    def f(a):
      return jax.device_put(a, self.d2) + 1
    line = f.__code__.co_firstlineno + 1
    with self.assertDeviceConflict(
        r"argument a of f with shape float32\[\] and with device ids \[1\]",
        r"jax\.device_put\(\.\.\., device=cpu:2\) with device ids \[2\]",
        rf"placement_test\.py:{line}", "cpu:1 and cpu:2"):
      jax.jit(f)(a1)

  def test_created_on_one_device_combined_with_another(self):
    a1 = jax.device_put(jnp.ones(3), _dev(1))
    def g(a):
      return jnp.zeros(3, device=self.d2) + a
    line = g.__code__.co_firstlineno + 1
    with self.assertDeviceConflict(
        r"jnp\.zeros\(\.\.\., device=cpu:2\)", rf"placement_test\.py:{line}",
        r"argument a of g", r"device ids \[1\]"):
      jax.jit(g)(a1)

  @jtu.thread_unsafe_test()  # changes config
  @dtu.one_device_per_computation()
  def test_unused_arguments_on_different_devices(self):
    a1, b2 = jax.device_put(1.0, _dev(1)), jax.device_put(2.0, _dev(2))
    def h(first, second):
      return first
    with self.assertDeviceConflict(
        "argument first of h", "argument second of h", r"device ids \[1\]",
        r"device ids \[2\]", r"called at .*placement_test\.py:\d+"):
      jax.jit(h)(a1, b2)

  def test_constant_and_argument_on_different_devices(self):
    c2 = jax.device_put(jnp.ones(3), self.d2)
    with self.assertDeviceConflict(
        # jnp's add is itself a jit, so c2 meets it as an argument there.
        r"(closed-over constant float32\[3\]|argument y of add)",
        r"device ids \[2\]", r"device ids \[3\]",
        r"placement_test\.py:\d+"):
      jax.jit(lambda x: x * 2 + c2)(self.x3)

  def test_device_put_inside_a_nested_jit(self):
    inner = jax.jit(lambda v: jax.device_put(v, self.d2))
    with self.assertDeviceConflict(r"device ids \[2\]", r"device ids \[3\]"):
      jax.jit(lambda x: inner(x) + x)(self.x3)

  @parameterized.parameters(True, False)
  @jtu.thread_unsafe_test()  # changes config
  def test_inside_a_cond_branch(self, cross_device):
    f = jax.jit(lambda x: lax.cond(True, lambda v: jax.device_put(v, self.d2),
                                   lambda v: v, x))
    if cross_device and not dtu.CROSS_DEVICE:
      self.skipTest("needs the series' second step")
    with (config.device_tracing_cross_device(True) if cross_device
          else dtu.one_device_per_computation()):
      if cross_device:
        # The branches' output types differ in their committed devices.
        with self.assertRaisesRegex(
            TypeError,
            r"committed devices do not match \(cpu:2 and cpu:3\)"):
          f(self.x3)
      else:
        with self.assertDeviceConflict(r"device ids \[2\]",
                                       r"device ids \[3\]"):
          f(self.x3)


class TransferGuardTest(dtu.InputsTestCase):

  @jtu.thread_unsafe_test()  # sets a transfer guard
  def test_array_api_pattern_makes_no_implicit_transfer(self):
    def f(x):
      return x + jnp.zeros(x.shape, device=x.device)
    g = jax.jit(f)
    g(self.x3), f(self.x3)  # warm up; compiling may transfer constants
    with jax.transfer_guard("disallow"):
      self.assertOn(g(self.x3), self.d3, True)
      self.assertOn(f(self.x3), self.d3, True)

  @parameterized.named_parameters(
      ("zeros", lambda x, d: jnp.zeros(3, device=d)),
      ("ones", lambda x, d: jnp.ones((2, 3), device=d)),
      ("full", lambda x, d: jnp.full(3, 2.0, device=d)),
      ("empty", lambda x, d: jnp.empty(3, device=d)),
      ("zeros_like", lambda x, d: jnp.zeros_like(x, device=d)),
      ("ones_like", lambda x, d: jnp.ones_like(x, device=d)),
      ("full_like", lambda x, d: jnp.full_like(x, 7.0, device=d)),
      ("empty_like", lambda x, d: jnp.empty_like(x, device=d)),
      ("eye", lambda x, d: jnp.eye(3, device=d)),
      ("arange", lambda x, d: jnp.arange(3, device=d)),
      ("device_put", lambda x, d: jax.device_put(x, d)),
      ("to_device", lambda x, d: x.to_device(d)),
  )
  @jtu.thread_unsafe_test()  # sets a transfer guard
  def test_creation_on_a_device_makes_no_implicit_transfer(self, make):
    for run in (lambda: make(self.x3, self.d3),
                lambda: jax.jit(lambda v: make(v, v.device))(self.x3)):
      run()
      with jax.transfer_guard("disallow"):
        self.assertOn(run(), self.d3, True)


class FastPathTest(dtu.InputsTestCase):

  def test_placement_adds_no_python_step(self):
    f = jax.jit(lambda x: x + jnp.zeros(x.shape, device=x.device))
    g = jax.jit(lambda x: jnp.zeros(2))   # placed by an unused argument
    for fn in (f, g):
      for x in (self.x3, self.u):
        fn(x)
        with jtu.count_pjit_cpp_cache_miss() as misses:
          for _ in range(50):
            out = fn(x)
        self.assertEqual(misses(), 0)
        self.assertEqual(out.devices(), x.devices())


# --------------------------------------------------------------------------
# Property test: small random programs, jit against the specification.

_DEVICES = (1, 3)  # the non-default devices values may be committed to
_UNARY = {"sin": np.sin, "neg": np.negative, "double": lambda a: a * 2}
_BINARY = {"add": np.add, "mul": np.multiply}


def _draw_program(draw):
  """Inputs (None: uncommitted, or a device index) and a list of ops."""
  inputs = draw(st.lists(st.one_of(st.none(), st.sampled_from(_DEVICES)),
                         min_size=1, max_size=3))
  ops = []
  n = len(inputs)
  for _ in range(draw(st.integers(1, 6))):
    kind = draw(st.sampled_from(["unary", "binary", "create", "device_put"]))
    if kind == "unary":
      ops.append(("unary", draw(st.sampled_from(sorted(_UNARY))),
                  draw(st.integers(0, n - 1))))
    elif kind == "binary":
      ops.append(("binary", draw(st.sampled_from(sorted(_BINARY))),
                  draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))))
    elif kind == "create":
      ops.append(("create", draw(st.sampled_from(["zeros", "ones", "arange"])),
                  draw(st.one_of(st.none(), st.just("like"),
                                 st.sampled_from(_DEVICES))),
                  draw(st.integers(0, n - 1))))
    else:
      ops.append(("device_put", draw(st.sampled_from(_DEVICES)),
                  draw(st.integers(0, n - 1))))
    n += 1
  outputs = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3))
  return inputs, ops, outputs


def _run_program(ops, outputs, args, device_of):
  """Runs a program on jax values; `device_of(i)` picks a device index."""
  vals = list(args)
  for op in ops:
    if op[0] == "unary":
      fn = {"sin": jnp.sin, "neg": jnp.negative,
            "double": lambda a: a * 2}[op[1]]
      vals.append(fn(vals[op[2]]))
    elif op[0] == "binary":
      vals.append({"add": jnp.add, "mul": jnp.multiply}[op[1]](
          vals[op[2]], vals[op[3]]))
    elif op[0] == "create":
      _, what, dev, like = op
      d = (vals[like].device if dev == "like" else
           None if dev is None else _dev(dev))
      vals.append({"zeros": jnp.zeros, "ones": jnp.ones,
                   "arange": lambda n, device: jnp.arange(
                       n, dtype=jnp.float32, device=device)}[what](
                           3, device=d))
    else:
      vals.append(jax.device_put(vals[op[2]], _dev(op[1])))
  return [vals[i] for i in outputs]


def _numpy_program(ops, outputs, args):
  vals = [np.asarray(a) for a in args]
  for op in ops:
    if op[0] == "unary":
      vals.append(_UNARY[op[1]](vals[op[2]]))
    elif op[0] == "binary":
      vals.append(_BINARY[op[1]](vals[op[2]], vals[op[3]]))
    elif op[0] == "create":
      vals.append({"zeros": np.zeros(3, np.float32),
                   "ones": np.ones(3, np.float32),
                   "arange": np.arange(3, dtype=np.float32)}[op[1]])
    else:
      vals.append(vals[op[2]])
  return [vals[i] for i in outputs]


def _specified_placement(inputs, ops):
  """(devices that commit the computation, whether a device= is used)."""
  sources = {d for d in inputs if d is not None}
  sources |= {op[2] for op in ops if op[0] == "create" and
              op[2] not in (None, "like")}
  sources |= {op[1] for op in ops if op[0] == "device_put"}
  uses_device_arg = any(op[0] == "create" and op[2] == "like" for op in ops)
  return sources, uses_device_arg


def _home_device(inputs, ops):
  """(The home device of a program's computation, whether tracing it fails).

  docs/design.md, "The home device": the first committed argument; else the
  one device its sources commit to (device_put, device=), else the default
  device (cpu:0). A `.device` read of an uncommitted value answers the home
  device as far as known (the one device committed so far, else the
  default); if the final home differs, the program is traced again with it
  known, and a second disagreement is an error. A device= taken from such a
  read is a source of its own ("Known limits").
  """
  committed = [d for d in inputs if d is not None]
  if committed:
    return committed[0], False

  def trace(hint):
    devs, sources, answers = list(inputs), set(), []
    for op in ops:
      if op[0] == "unary":
        devs.append(devs[op[2]])
      elif op[0] == "binary":
        a, b = devs[op[2]], devs[op[3]]
        devs.append(a if a is not None else b)
      elif op[0] == "create":
        d = op[2]
        if d == "like":
          d = devs[op[3]]
          if d is None:  # read before the home device is decided
            d = hint if hint is not None else (
                next(iter(sources)) if len(sources) == 1 else 0)
            answers.append(d)
        if d is not None:
          sources.add(d)
        devs.append(d)
      else:
        sources.add(op[1])
        devs.append(op[1])
    final = next(iter(sources)) if len(sources) == 1 else 0
    return final, any(a != final for a in answers)

  final, disagrees = trace(None)
  if not disagrees:
    return final, False
  second, disagrees = trace(final)
  return second, disagrees


def _args(inputs):
  base = [np.arange(3.0, dtype=np.float32) + i for i in range(len(inputs))]
  args = [jnp.asarray(b) if d is None else jax.device_put(b, _dev(d))
          for b, d in zip(base, inputs)]
  return base, args


if hypothesis is not None:
  programs = st.composite(_draw_program)
  _SETTINGS = hypothesis.settings(
      max_examples=60, deadline=None, derandomize=True,
      suppress_health_check=list(hypothesis.HealthCheck))
else:
  # Stand-ins for the decorators below: without hypothesis, each property
  # test is skipped. (With derandomize=True, hypothesis derives its examples
  # from the test's source, decorators included: these tests keep theirs.)
  hypothesis = types.SimpleNamespace(
      given=lambda *_: unittest.skip("needs hypothesis"))
  _SETTINGS = lambda test: test
  programs = lambda: None


@jtu.thread_unsafe_test_class()  # changes config and the default device
class PropertyTest(dtu.InputsTestCase):

  @_SETTINGS
  @hypothesis.given(programs())
  @dtu.one_device_per_computation()
  def test_random_programs_follow_the_specification(self, program):
    # A computation on one device (docs/design.md, "The placement rule"),
    # with jax_device_tracing_cross_device off.
    inputs, ops, outputs = program
    base, args = _args(inputs)
    sources, uses_device_arg = _specified_placement(inputs, ops)
    f = jax.jit(lambda *a: _run_program(ops, outputs, a, None))
    if len(sources) > 1:
      # Committed sources on two devices: a clear error, never a silent
      # placement on one of them.
      with self.assertRaises(device_tracing.DeviceConflictError):
        f(*args)
      return
    device = _dev(next(iter(sources))) if sources else self.d0
    committed = bool(sources) or uses_device_arg
    outs = f(*args)
    want = _numpy_program(ops, outputs, base)
    for out, w in zip(outs, want):
      self.assertOn(out, device, committed)
      self.assertAllClose(out, np.broadcast_to(w, out.shape))
    # Eagerly, with uncommitted values on the computation device, the same
    # program computes the same values on the same device, and commits no
    # more than jit does.
    with jax.default_device(device):
      eager_args = [jax.device_put(b) if d is None else a
                    for a, b, d in zip(args, base, inputs)]
      eager = _run_program(ops, outputs, eager_args, None)
    for e, out in zip(eager, outs):
      self.assertEqual(e.devices(), {device})
      self.assertAllClose(e, out)
      self.assertLessEqual(e.committed, out.committed)

  @dtu.needs_cross_device
  @_SETTINGS
  @hypothesis.given(programs())
  def test_random_programs_run_as_in_eager_mode(self, program):
    # Across devices (jax_device_tracing_cross_device, the default): device=
    # and device_put to any device, as eagerly; values committed to two
    # devices meeting in one operation are an error in both.
    inputs, ops, outputs = program
    base, args = _args(inputs)
    home, stale = _home_device(inputs, ops)
    home = _dev(home)
    f = jax.jit(lambda *a: _run_program(ops, outputs, a, None))
    if stale:
      with self.assertRaisesRegex(device_tracing.DeviceConflictError,
                                  "was read .*still read"):
        f(*args)
      return
    with jax.default_device(home):
      eager_args = [jax.device_put(b) if d is None else a
                    for a, b, d in zip(args, base, inputs)]
      try:
        eager = _run_program(ops, outputs, eager_args, None)
      except ValueError as e:
        self.assertIn("incompatible devices", str(e))
        eager = None
    if eager is None:
      with self.assertRaisesRegex(device_tracing.DeviceConflictError,
                                  "cannot meet in one operation"):
        f(*args)
      return
    outs = f(*args)
    want = _numpy_program(ops, outputs, base)
    sources, uses_device_arg = _specified_placement(inputs, ops)
    for out, e, w in zip(outs, eager, want):
      self.assertEqual(out.devices(), e.devices())
      self.assertEqual(out.committed, bool(sources) or uses_device_arg)
      self.assertLessEqual(e.committed, out.committed)
      self.assertAllClose(out, np.broadcast_to(w, out.shape))
      self.assertAllClose(out, e)


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
