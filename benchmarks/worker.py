"""One round of the benchmarks, in whatever jax this interpreter imports.

Run by benchmarks/run.py, alternately in the fork's and upstream's
environment; prints one JSON object: {metric: [samples...]} plus counts.
Times are seconds per operation (per call, per trace+lower).

  worker.py [all|memory|instructions] [--only TEXT]... [--skip TEXT]...
  worker.py lines --row ROW

--only keeps the rows whose name contains one of the TEXTs (and their
counts); --skip leaves out the rows whose name contains one of them. Rows
left out are not run at all.
"""

import argparse
import gc
import itertools
import json
import os
import resource
import time

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# SciPy's array-API support (the array-API rows) must be on before scipy is
# imported; jax itself does not import scipy.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax._src import test_util as jtu  # noqa: E402
import numpy as np  # noqa: E402

D = jax.devices()
REPEATS = int(os.environ.get("BENCH_REPEATS", "5"))
# Whether this jax runs a jitted computation across devices (the fork).
# Upstream drops device_put inside jit: its cross-device jit is not measured.
CROSS_DEVICE = "devtrace" in jax.__version__
# Row filters (--only, --skip), set by main().
ONLY: list[str] = []
SKIP: list[str] = []
# Programs whose trace has already filled the caches of the nested jnp jits
# inside (a warm-up that the first call of a large program shares).
_WARMED: set[str] = set()


def want(*rows):
  """Whether any of these rows is to be measured."""
  return any((not ONLY or any(t in r for t in ONLY)) and
             not any(t in r for t in SKIP) for r in rows)


def per_call(fn, n):
  """Median over REPEATS of the mean time of n calls to fn()."""
  samples = []
  # From a collected heap, as for the instruction counts: once per row
  # (before every repetition, collecting lengthened a full run by minutes).
  gc.collect()
  for _ in range(REPEATS):
    t = time.perf_counter()
    for _ in range(n):
      fn()
    samples.append((time.perf_counter() - t) / n)
  return samples


def inputs(committed):
  if committed:
    put = lambda a: jax.device_put(a, D[3])
  else:
    put = jnp.asarray
  return put


def dispatch_cases(put):
  """name -> (jitted function, args) for the steady-state dispatch cases."""
  x = put(jnp.ones((8,), jnp.float32))
  xs = [put(jnp.full((4,), i, jnp.float32)) for i in range(10)]
  tree = {f"k{i}": put(jnp.full((2,), i, jnp.float32)) for i in range(100)}
  return {
      "identity": (jax.jit(lambda a: a), (x,)),
      "x + 1": (jax.jit(lambda a: a + 1), (x,)),
      "10 arguments": (jax.jit(lambda *a: sum(a)), tuple(xs)),
      "pytree of 100 leaves": (jax.jit(lambda t: jax.tree.map(
          lambda v: v * 2, t)), (tree,)),
  }


def eager_cases(put):
  x, y = put(jnp.arange(16.0)), put(jnp.ones(16))
  return {"x + y": lambda: x + y, "jnp.sum(x)": lambda: jnp.sum(x),
          "x[0]": lambda: x[0]}


def creation_cases():
  """name -> function: eager creation on cpu:3, what array-API code runs.

  Every creation function with device=d; fixed and varying fill values,
  shapes and offsets (a value must never cost a compile: the varying values
  are new on every call, from a counter, so a compile per value would show
  in the time and in the compile count), and *_like of committed and
  uncommitted arrays. _is_varying(name) tells the varying rows, whose
  compiles in the timed loop are counted (they must be 0).
  """
  d = D[3]
  x, u = jax.device_put(jnp.arange(16.0), d), jnp.arange(16.0)
  values = itertools.count(0.5)        # 0.5, 1.5, 2.5, ...: never repeat
  starts = itertools.count(1)
  offsets = itertools.cycle(range(3))
  shapes = itertools.cycle((15, 16, 17))
  nan = float("nan")
  def arange_from(k):
    return jnp.arange(k, k + 16, device=d)
  return {
      "jnp.zeros(16, device=d)": lambda: jnp.zeros(16, device=d),
      "jnp.zeros(n, device=d), 3 shapes": (
          lambda: jnp.zeros(next(shapes), device=d)),
      "jnp.ones(16, device=d)": lambda: jnp.ones(16, device=d),
      "jnp.empty(16, device=d)": lambda: jnp.empty(16, device=d),
      "jnp.full(16, 2.5, device=d)": lambda: jnp.full(16, 2.5, device=d),
      "jnp.full(16, v, device=d), new v each call": (
          lambda: jnp.full(16, next(values), device=d)),
      "jnp.full(16, nan, device=d)": lambda: jnp.full(16, nan, device=d),
      "jnp.full(16, np.float32(2.5), device=d)": (
          lambda: jnp.full(16, np.float32(2.5), device=d)),
      "jnp.full(16, 1 + 2j, device=d)": lambda: jnp.full(16, 1 + 2j, device=d),
      "jnp.arange(16, device=d)": lambda: jnp.arange(16, device=d),
      "jnp.arange(k, k + 16, device=d), new k each call": (
          lambda: arange_from(next(starts))),
      "jnp.linspace(0.0, 1.0, 16, device=d)": (
          lambda: jnp.linspace(0.0, 1.0, 16, device=d)),
      "jnp.linspace(0.0, v, 16, device=d), new v each call": (
          lambda: jnp.linspace(0.0, next(values), 16, device=d)),
      "jnp.eye(8, device=d)": lambda: jnp.eye(8, device=d),
      "jnp.eye(8, k=k, device=d), 3 offsets": (
          lambda: jnp.eye(8, k=next(offsets), device=d)),
      "jnp.asarray(u, device=d)": lambda: jnp.asarray(u, device=d),
      "jnp.asarray(v, device=d), new v each call": (
          lambda: jnp.asarray(next(values), device=d)),
      "jnp.array(u, device=d)": lambda: jnp.array(u, device=d),
      "jnp.zeros_like(x), x committed": lambda: jnp.zeros_like(x),
      "jnp.zeros_like(u), u uncommitted": lambda: jnp.zeros_like(u),
      "jnp.zeros_like(u, device=d), u uncommitted": (
          lambda: jnp.zeros_like(u, device=d)),
      "jnp.ones_like(x), x committed": lambda: jnp.ones_like(x),
      "jnp.ones_like(u), u uncommitted": lambda: jnp.ones_like(u),
      "jnp.full_like(x, 2.5), x committed": lambda: jnp.full_like(x, 2.5),
      "jnp.full_like(x, v), x committed, new v each call": (
          lambda: jnp.full_like(x, next(values))),
      "jnp.full_like(u, v), u uncommitted, new v each call": (
          lambda: jnp.full_like(u, next(values))),
      "jnp.empty_like(x), x committed": lambda: jnp.empty_like(x),
      "jnp.empty_like(u), u uncommitted": lambda: jnp.empty_like(u),
  }


def _is_varying(name):
  return any(t in name for t in ("each call", "shapes", "offsets"))


RFFTFREQ_JIT = ("jit(scipy.fft.rfftfreq(16, d=x[0], xp=xp)) (no device=: "
                "dropped upstream)")


def array_api_rows():
  """The array-API rows' names, without importing the libraries."""
  names = ["xpx.nunique(x)", "xpx.pad(x, 2)", "xpx.one_hot(i, 4)",
           "xpx.cov(m)", "xpx.at(x)[1].set(2.0)", "scipy.special.logsumexp(x)",
           "scipy.stats.moment(x, order=3)"]
  return ([f"eager: array API: {n}" for n in names] +
          ["eager: array API: scipy.fft.rfftfreq(16, xp=xp, device=d)"] +
          [f"dispatch: array API: jit({n})" for n in names] +
          [f"dispatch: array API: {RFFTFREQ_JIT}"])


def array_api_cases():
  """name -> (eager function, jit name, jitted function, input, n).

  Array-API library code on an array committed to cpu:3: array-api-extra,
  and SciPy with SCIPY_ARRAY_API=1, which find jax.numpy through
  array_api_compat.array_namespace. n is the number of eager calls per
  timed repetition (the jitted calls take 1000, or 300 for nunique).
  """
  import array_api_compat  # noqa: PLC0415 (only the array-API rows need it)
  import array_api_extra as xpx  # noqa: PLC0415
  import scipy.fft  # noqa: PLC0415
  import scipy.special  # noqa: PLC0415
  import scipy.stats  # noqa: PLC0415
  ns = array_api_compat.array_namespace
  d = D[3]
  x = jax.device_put(jnp.arange(16.0) % 5, d)
  i = jax.device_put(jnp.arange(8) % 4, d)
  m = jax.device_put(jnp.arange(24.0).reshape(3, 8) ** 1.5, d)
  cases = {
      "xpx.nunique(x)": (lambda a: xpx.nunique(a), x, 10),
      "xpx.pad(x, 2)": (lambda a: xpx.pad(a, 2), x, 200),
      "xpx.one_hot(i, 4)": (lambda a: xpx.one_hot(a, 4), i, 200),
      "xpx.cov(m)": (lambda a: xpx.cov(a), m, 200),
      "xpx.at(x)[1].set(2.0)": (lambda a: xpx.at(a)[1].set(2.0), x, 50),
      "scipy.special.logsumexp(x)": (
          lambda a: scipy.special.logsumexp(a), x, 20),
      "scipy.stats.moment(x, order=3)": (
          lambda a: scipy.stats.moment(a, order=3), x, 20),
  }
  out = {name: (f, f"jit({name})", jax.jit(f), a, n)
         for name, (f, a, n) in cases.items()}
  # rfftfreq takes no array: eagerly the namespace comes from x and the
  # device is d; under jit, upstream drops device= (the result lands
  # uncommitted on cpu:0) and a tracer has no .device, so the jitted
  # version takes its spacing from x instead, which places it on cpu:3.
  out["scipy.fft.rfftfreq(16, xp=xp, device=d)"] = (
      lambda a: scipy.fft.rfftfreq(16, xp=ns(a), device=d),
      RFFTFREQ_JIT,
      jax.jit(lambda a: scipy.fft.rfftfreq(16, d=a[0], xp=ns(a))), x, 50)
  assert sorted(array_api_rows()) == sorted(
      [f"eager: array API: {k}" for k in out] +
      [f"dispatch: array API: {v[1]}" for v in out.values()])
  return out


def _tags():
  return (("committed cpu:3", inputs(True)), ("uncommitted", inputs(False)))


def dispatch(results, counts):
  for tag, put in _tags():
    for name, (f, args) in dispatch_cases(put).items():
      if not want(f"dispatch: {name} ({tag})"):
        continue
      jax.block_until_ready(f(*args))
      jax.block_until_ready(f(*args))
      n = 300 if name == "pytree of 100 leaves" else 2000
      with jtu.count_pjit_cpp_cache_miss() as misses:
        results[f"dispatch: {name} ({tag})"] = per_call(lambda: f(*args), n)
      counts[f"python-path calls, {name} ({tag})"] = misses()
      jax.block_until_ready(f(*args))


def eager(results, counts):
  for tag, put in _tags():
    for name, fn in eager_cases(put).items():
      if not want(f"eager: {name} ({tag})"):
        continue
      for _ in range(20):
        fn()
      results[f"eager: {name} ({tag})"] = per_call(fn, 1000)
  for name, fn in creation_cases().items():
    if not want(f"eager: {name}"):
      continue
    for _ in range(60):
      jax.block_until_ready(fn())
    with jtu.count_jit_compilation_cache_miss() as compiles:
      results[f"eager: {name}"] = per_call(fn, 200)
      jax.block_until_ready(fn())
    if _is_varying(name):
      counts[f"compiles in steady state, eager: {name}"] = compiles()


def array_api(results, counts):
  """Array-API library calls on cpu:3, eagerly and jitted (steady state)."""
  rows = array_api_cases()
  for name, (f, jit_name, jf, a, n) in rows.items():
    row = f"eager: array API: {name}"
    if want(row):
      for _ in range(max(5, n // 10)):
        jax.block_until_ready(f(a))
      with jtu.count_jit_compilation_cache_miss() as compiles:
        results[row] = per_call(lambda: f(a), n)
        jax.block_until_ready(f(a))
      counts[f"compiles in steady state, {row}"] = compiles()
    row = f"dispatch: array API: {jit_name}"
    if want(row):
      for _ in range(20):
        jax.block_until_ready(jf(a))
      with jtu.count_pjit_cpp_cache_miss() as misses:
        results[row] = per_call(lambda: jf(a), 300 if "nunique" in name
                                else 1000)
      counts[f"python-path calls, array API: {jit_name}"] = misses()
      jax.block_until_ready(jf(a))


def _mlp(layers):
  def f(params, x):
    for w, b in params:
      x = jnp.tanh(x @ w + b)
    return x.sum()
  return f


def _big_program(n):
  def f(x):
    for i in range(n // 4):
      x = jnp.sin(x) * 1.0001 + jnp.cos(x) - (i % 7)
    return x
  return f


def _scan_body(n):
  def f(x):
    def body(c, t):
      for _ in range(n // 4):
        c = jnp.sin(c) * t + jnp.cos(c) - t
      return c, c.sum()
    return lax.scan(body, x, jnp.arange(4.0))
  return f


def programs():
  """name -> (function maker, args) for the large programs traced."""
  put = inputs(True)
  params = [(put(jnp.ones((16, 16)) * 0.01), put(jnp.zeros(16)))
            for _ in range(200)]
  x = put(jnp.ones((4, 16)))
  v = put(jnp.ones(32))
  return {
      "200-layer MLP forward": (lambda: _mlp(200), (params, x)),
      "200-layer MLP grad": (lambda: jax.grad(_mlp(200)), (params, x)),
      "scan with a 2,000-equation body": (lambda: _scan_body(2000), (v,)),
      "program of ~5,000 equations": (lambda: _big_program(5000), (v,)),
  }


def trace_and_lower(results, counts):
  for name, (make, args) in programs().items():
    if not want(f"trace+lower: {name}"):
      continue
    # The first trace also fills the caches of the jnp functions used inside
    # (nested jits); it is a warm-up, not a sample.
    jax.jit(make()).trace(*args).lower()
    _WARMED.add(name)
    samples = []
    for _ in range(REPEATS):
      f = jax.jit(make())          # a new function: its own trace and lowering
      gc.collect()
      t = time.perf_counter()
      f.trace(*args).lower()
      samples.append(time.perf_counter() - t)
    results[f"trace+lower: {name}"] = samples


def _first_call_function(traces=None, salt=None):
  # `salt` makes each repetition's program its own: the fork lowers equal
  # programs that name other devices once, and compiles a module once per
  # device, so a repetition of the same program would skip both.
  def g(a):
    if traces is not None:
      traces.append(1)
    out = jnp.sin(a) * 2 + a.sum()
    return out if salt is None else out + salt
  return jax.jit(g)


def _device_reading_function():
  # The array-API idiom: a helper array on the input's device. Upstream has
  # no `x.device` under jit (getattr gives None: the default device).
  def g(a):
    z = jnp.zeros(a.shape, a.dtype, device=getattr(a, "device", None))
    return jnp.sin(a) * 2 + z + a.sum()
  return jax.jit(g)


SHARDED_TRACE = "trace: the first-call program, sharded over 2 devices"
TRACES = {"trace: the first-call program": _first_call_function,
          "trace: a function that reads x.device": _device_reading_function,
          SHARDED_TRACE: _first_call_function}


def _trace_arg(name):
  """The argument a TRACES row traces its function on.

  Committed to cpu:5; for SHARDED_TRACE, sharded over cpu:2 and cpu:3 on a
  mesh with an Explicit axis, where `x.device` under jit names a concrete
  mesh (the function reads none): what the trace context's mesh resolution
  costs a function that does not read it.
  """
  if name != SHARDED_TRACE:
    return jax.device_put(jnp.arange(64.0), D[5])
  mesh = jax.sharding.Mesh(np.array(D[2:4]), ("x",),
                           axis_types=(jax.sharding.AxisType.Explicit,))
  return jax.device_put(jnp.arange(64.0), jax.sharding.NamedSharding(
      mesh, jax.sharding.PartitionSpec("x")))


def _first_call_args(k):
  args = [jax.device_put(jnp.arange(64.0), D[i]) for i in range(k)]
  jax.block_until_ready(args)
  return args


def first_calls(results, counts, k=8):
  if want(f"first call on {k} new devices (trace+lower+compile)"):
    _small_first_calls(results, counts, k)
  if want("one lowering of the first-call program", *TRACES, BIG_TRACE):
    _one_trace_and_lowering(results)


def _small_first_calls(results, counts, k):
  samples = []
  for rep in range(max(2, REPEATS // 2)):
    traces = []
    f = _first_call_function(traces, salt=float(rep + 1))
    args = _first_call_args(k)
    with (jtu.count_jit_and_pmap_lowerings() as lowerings,
          jtu.count_jit_compilation_cache_miss() as compiles):
      t = time.perf_counter()
      for a in args:
        jax.block_until_ready(f(a))
      samples.append(time.perf_counter() - t)
    counts[f"first call on {k} devices: traces"] = len(traces)
    # The program's own lowering and compile (jnp.sum inside is a nested
    # jit, inlined into the same module).
    counts[f"first call on {k} devices: lowerings"] = lowerings()
    counts[f"first call on {k} devices: compiles"] = compiles()
  results[f"first call on {k} new devices (trace+lower+compile)"] = samples


def _one_trace_and_lowering(results):
  # What one trace and one lowering cost, for a device-polymorphic reuse.
  a = _trace_arg(None)
  if want("one lowering of the first-call program"):
    lo = []
    for _ in range(REPEATS):
      traced = _first_call_function().trace(a)
      t = time.perf_counter()
      traced.lower()
      lo.append(time.perf_counter() - t)
    results["one lowering of the first-call program"] = lo
  for name, make in TRACES.items():
    if want(name):
      results[name] = per_call(_traced(make, name), 20)
  if want(BIG_TRACE):
    results[BIG_TRACE] = per_call(_big_traced(), 1)


BIG_FIRST_CALL = "first call on 8 devices (200-layer MLP grad)"
# One trace of the same program (no lowering): what each further device
# pattern costs where a trace is keyed on the devices.
BIG_TRACE = "trace: the 200-layer MLP grad"


def _big_first_call_args():
  """The MLP's arguments committed to each of cpu:0 ... cpu:7.

  Also fills the caches of the nested jnp jits with one trace on cpu:3,
  as trace_and_lower's warm-up does (skipped if that already ran), so the
  row measures the same whether or not the rows before it ran.
  """
  # The values of programs()' MLP, put in one device_put per device.
  host = ([(np.full((16, 16), 0.01, np.float32), np.zeros(16, np.float32))
           for _ in range(200)], np.ones((4, 16), np.float32))
  args = [jax.device_put(host, dev) for dev in D[:8]]
  jax.block_until_ready(args)
  if "200-layer MLP grad" not in _WARMED:
    jax.jit(jax.grad(_mlp(200))).trace(*args[3]).lower()
    _WARMED.add("200-layer MLP grad")
  return args


def _big_first_call_function(traces=None, salt=None):
  # `salt`: as in _first_call_function (a factor, so that grad keeps it).
  mlp = _mlp(200)
  def loss(params, x):
    if traces is not None:
      traces.append(1)
    out = mlp(params, x)
    return out if salt is None else out * (1.0 + salt * 2.0 ** -20)
  return jax.jit(jax.grad(loss))


def big_first_call(results, counts):
  """A new jit(grad) of the 200-layer MLP, called once on each of 8 devices.

  One sample per round (8 compiles of a large program, seconds each).
  """
  if not want(BIG_FIRST_CALL):
    return
  args = _big_first_call_args()
  samples = []
  for rep in range(max(1, REPEATS // 5)):
    traces = []
    f = _big_first_call_function(traces, salt=float(rep + 1))
    gc.collect()
    with (jtu.count_jit_and_pmap_lowerings() as lowerings,
          jtu.count_jit_compilation_cache_miss() as compiles):
      t = time.perf_counter()
      for a in args:
        jax.block_until_ready(f(*a))
      samples.append(time.perf_counter() - t)
    counts[f"{BIG_FIRST_CALL}: traces"] = len(traces)
    counts[f"{BIG_FIRST_CALL}: lowerings"] = lowerings()
    counts[f"{BIG_FIRST_CALL}: compiles"] = compiles()
  results[BIG_FIRST_CALL] = samples


def _segments(n_ops, n_transfers):
  """A chain of n_ops elementwise ops, moved between cpu:1 and cpu:2
  n_transfers times: the segments' functions and their devices."""
  per = n_ops // (n_transfers + 1)
  def segment(k):
    def seg(x):
      for _ in range(per):
        x = jnp.sin(x) * 2 if k % 2 == 0 else jnp.cos(x) + 1
      return x
    return seg
  return ([segment(k) for k in range(n_transfers + 1)],
          [D[1 + k % 2] for k in range(n_transfers + 1)])


def cross_device_cases():
  """name -> {"jit": staged, "hand-split": per-device jits, "eager": ...}."""
  out = {}
  for n_ops, n_transfers in ((2, 1), (10, 1), (40, 3)):
    segs, devs = _segments(n_ops, n_transfers)
    def program(x, segs=segs, devs=devs):
      for k, (seg, d) in enumerate(zip(segs, devs)):
        x = seg(x if k == 0 else jax.device_put(x, d))
      return x
    jitted_segs = [jax.jit(seg) for seg in segs]
    def hand_split(x, segs=jitted_segs, devs=devs):
      for k, (seg, d) in enumerate(zip(segs, devs)):
        x = seg(x if k == 0 else jax.device_put(x, d))
      return x
    name = (f"{n_ops} ops, {n_transfers} transfer"
            f"{'s' if n_transfers > 1 else ''}")
    out[name] = {"hand-split": hand_split, "eager": program}
    if CROSS_DEVICE:
      out[name]["jit"] = jax.jit(program)
  return out


def cross_device(results, counts):
  x = jax.device_put(jnp.linspace(0.0, 1.0, 64), D[1])
  for name, impls in cross_device_cases().items():
    for kind, fn in impls.items():
      if not want(f"cross-device: {name} ({kind})"):
        continue
      for _ in range(20):
        jax.block_until_ready(fn(x))
      with jtu.count_jit_compilation_cache_miss() as compiles:
        results[f"cross-device: {name} ({kind})"] = per_call(
            lambda: fn(x), 100 if kind == "eager" else 500)
        jax.block_until_ready(fn(x))
      counts[f"compiles in steady state, {name} ({kind})"] = compiles()


def memory(results):
  if not want("peak RSS after the large traces (MiB)",
              "RSS growth during the large traces (MiB)"):
    return
  progs = programs()
  gc.collect()
  before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
  for name in ("200-layer MLP grad", "program of ~5,000 equations"):
    make, args = progs[name]
    jax.jit(make()).trace(*args).lower()
  after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
  results["peak RSS after the large traces (MiB)"] = [after / 1024]
  results["RSS growth during the large traces (MiB)"] = [(after - before) / 1024]


FIRST_CALL_RSS = ("peak RSS of the first call on 8 devices (200-layer MLP "
                  "grad) (MiB)")


def first_call_memory(results):
  """Peak RSS of a process whose work is the MLP grad's first call on 8
  devices (run.py runs it in a process of its own): the fork holds 8 traces
  of it where upstream holds one."""
  if not want(FIRST_CALL_RSS):
    return
  args = _big_first_call_args()
  f = _big_first_call_function()
  gc.collect()
  for a in args:
    jax.block_until_ready(f(*a))
  results[FIRST_CALL_RSS] = [
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024]


def _traced(make, name=None):
  """A new trace of make()'s function on the argument of row `name`.

  On cpu:5 (_trace_arg), after warm-ups that fill the caches of the nested
  jnp jits it uses (on cpu:5: their traces are keyed on the devices too).
  """
  a = _trace_arg(name)
  for _ in range(5):
    make().trace(a)
  return lambda: make().trace(a)


def _big_traced():
  """BIG_TRACE's block: a new trace of the MLP's grad on cpu:5, warmed."""
  big = _big_first_call_args()[5]
  for _ in range(2):
    _big_first_call_function().trace(*big)
  return lambda: _big_first_call_function().trace(*big)


def _first_call_block():
  """The small first call's block: a new function on cpu:0 ... cpu:7."""
  f = _first_call_function()
  args = _first_call_args(8)
  return lambda: [jax.block_until_ready(f(a)) for a in args]


def _big_first_call_block():
  """BIG_FIRST_CALL's block: a new jit(grad) of the MLP on cpu:0 ... cpu:7."""
  args = _big_first_call_args()
  f = _big_first_call_function()
  return lambda: [jax.block_until_ready(f(*a)) for a in args]


def instructions(labels):
  """Each measured block between markers, for a run under callgrind.

  run.py runs this under `valgrind --tool=callgrind --dump-before=getppid`:
  every mark() dumps the instructions executed since the previous one, so
  the dump at mark(label) counts exactly the block before it. Instruction
  counts do not depend on what else the machine is doing.
  """
  def mark(label):
    labels.append(label)
    os.getppid()

  def block(label, fn, n=1):
    # Each block starts from a collected heap, so where the cyclic collector
    # runs inside it depends only on what the block itself allocates (not on
    # what the rows before it left behind).
    gc.collect()
    mark(None)
    for _ in range(n):
      fn()
    mark((label, n))

  for tag, put in _tags():
    for name, (f, args) in dispatch_cases(put).items():
      if not want(f"dispatch: {name} ({tag})"):
        continue
      for _ in range(50):
        jax.block_until_ready(f(*args))
      block(f"dispatch: {name} ({tag})", lambda: f(*args), 500)
      jax.block_until_ready(f(*args))
    for name, fn in eager_cases(put).items():
      if not want(f"eager: {name} ({tag})"):
        continue
      for _ in range(50):
        fn()
      block(f"eager: {name} ({tag})", fn, 500)
  for name, fn in creation_cases().items():
    if not want(f"eager: {name}"):
      continue
    for _ in range(60):
      jax.block_until_ready(fn())
    block(f"eager: {name}", fn, 100)
    jax.block_until_ready(fn())
  if want(*array_api_rows()):
    for name, (f, jit_name, jf, a, n) in array_api_cases().items():
      if want(f"eager: array API: {name}"):
        for _ in range(max(5, n // 10)):
          jax.block_until_ready(f(a))
        block(f"eager: array API: {name}", lambda: f(a), max(5, n // 4))
        jax.block_until_ready(f(a))
      if want(f"dispatch: array API: {jit_name}"):
        for _ in range(50):
          jax.block_until_ready(jf(a))
        block(f"dispatch: array API: {jit_name}", lambda: jf(a), 200)
        jax.block_until_ready(jf(a))
  for name, (make, args) in programs().items():
    if not want(f"trace+lower: {name}"):
      continue
    jax.jit(make()).trace(*args).lower()
    _WARMED.add(name)
    f = jax.jit(make())
    gc.collect()
    block(f"trace+lower: {name}", lambda: f.trace(*args).lower())
  for name, make in TRACES.items():
    if want(name):
      fn = _traced(make, name)
      gc.collect()
      block(name, fn, 20)
  if want(BIG_TRACE):
    fn = _big_traced()
    gc.collect()
    block(BIG_TRACE, fn)
  if want("first call on 8 new devices (trace+lower+compile)"):
    block("first call on 8 new devices (trace+lower+compile)",
          _first_call_block())
  x = jax.device_put(jnp.linspace(0.0, 1.0, 64), D[1])
  for name, impls in cross_device_cases().items():
    for kind, fn in impls.items():
      if not want(f"cross-device: {name} ({kind})"):
        continue
      for _ in range(20):
        jax.block_until_ready(fn(x))
      block(f"cross-device: {name} ({kind})",
            lambda: jax.block_until_ready(fn(x)), 50)
  # Last: eight compiles of a large program (minutes under callgrind).
  if want(BIG_FIRST_CALL):
    fn = _big_first_call_block()
    gc.collect()
    block(BIG_FIRST_CALL, fn)


# Rows whose profile `run.py --profile ROW` reports: name -> set-up, which
# returns the block. A first call's set-up leaves the caches as a full run of
# instructions() leaves them before that block: the nested jnp jits traced on
# the devices of the rows before it (cpu:5 by the trace rows, and cpu:3 by
# the large programs for the MLP), not on the others.
def _profile_blocks():
  def first_call():
    _traced(_first_call_function)
    return _first_call_block()

  def big_first_call():
    _big_traced()
    return _big_first_call_block()

  blocks = {name: (lambda make=make, name=name: _traced(make, name))
            for name, make in TRACES.items()}
  blocks[BIG_TRACE] = _big_traced
  blocks["first call on 8 new devices (trace+lower+compile)"] = first_call
  blocks[BIG_FIRST_CALL] = big_first_call

  def repeated(fn):
    for _ in range(20):
      jax.block_until_ready(fn())
    return fn

  for tag, put in _tags():
    for name, fn in eager_cases(put).items():
      blocks[f"eager: {name} ({tag})"] = lambda fn=fn: repeated(fn)
  for name, fn in creation_cases().items():
    blocks[f"eager: {name}"] = lambda fn=fn: repeated(fn)
  return blocks


def lines(row):
  """Python lines executed per function in one run of a row's block.

  A profile that, like callgrind's counts, does not depend on the machine's
  load: where a row's extra instructions go, by function.
  """
  import collections
  import sys
  fn = _profile_blocks()[row]()
  gc.collect()
  counts = collections.Counter()

  def local(frame, event, arg):
    if event == "line":
      code = frame.f_code
      counts[f"{code.co_filename.split('site-packages/')[-1]}:"
             f"{code.co_name}"] += 1
    return local

  sys.settrace(lambda frame, event, arg: local if event == "call" else None)
  try:
    fn()
  finally:
    sys.settrace(None)
  return dict(counts)


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("which", nargs="?", default="all",
                  choices=("all", "memory", "first-call-memory",
                           "instructions", "lines"))
  ap.add_argument("--row", default=None, help="the row of `lines`")
  ap.add_argument("--only", action="append", default=[])
  ap.add_argument("--skip", action="append", default=[])
  args = ap.parse_args()
  which = args.which
  ONLY[:], SKIP[:] = args.only, args.skip
  results, counts = {}, {}
  if which == "instructions":
    labels = []
    instructions(labels)
    print(json.dumps({"version": jax.__version__, "labels": labels}))
    return
  if which == "lines":
    print(json.dumps({"version": jax.__version__,
                      "lines": lines(args.row)}))
    return
  if which == "memory":
    memory(results)
  elif which == "first-call-memory":
    first_call_memory(results)
  else:
    dispatch(results, counts)
    eager(results, counts)
    if want(*array_api_rows()):
      array_api(results, counts)
    trace_and_lower(results, counts)
    first_calls(results, counts)
    cross_device(results, counts)
    big_first_call(results, counts)
  print(json.dumps({"version": jax.__version__, "results": results,
                    "counts": counts}))


if __name__ == "__main__":
  main()
