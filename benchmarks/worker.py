"""One round of the benchmarks, in whatever jax this interpreter imports.

Run by benchmarks/run.py, alternately in the fork's and upstream's
environment; prints one JSON object: {metric: [samples...]} plus counts.
Times are seconds per operation (per call, per trace+lower).
"""

import gc
import itertools
import json
import os
import resource
import sys
import time

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax._src import test_util as jtu  # noqa: E402

D = jax.devices()
REPEATS = int(os.environ.get("BENCH_REPEATS", "5"))
# Whether this jax runs a jitted computation across devices (the fork).
# Upstream drops device_put inside jit: its cross-device jit is not measured.
CROSS_DEVICE = "devtrace" in jax.__version__


def per_call(fn, n):
  """Median over REPEATS of the mean time of n calls to fn()."""
  samples = []
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

  Fixed and varying fill values and offsets (a value must never cost a
  compile), and *_like of committed and uncommitted arrays.
  """
  d = D[3]
  x, u = jax.device_put(jnp.arange(16.0), d), jnp.arange(16.0)
  values = itertools.cycle([i + 0.5 for i in range(50)])
  offsets = itertools.cycle(range(3))
  nan = float("nan")
  return {
      "jnp.zeros(16, device=d)": lambda: jnp.zeros(16, device=d),
      "jnp.full(16, 2.5, device=d)": lambda: jnp.full(16, 2.5, device=d),
      "jnp.full(16, v, device=d), 50 values": (
          lambda: jnp.full(16, next(values), device=d)),
      "jnp.full(16, nan, device=d)": lambda: jnp.full(16, nan, device=d),
      "jnp.full_like(x, v), x committed, 50 values": (
          lambda: jnp.full_like(x, next(values))),
      "jnp.zeros_like(x), x committed": lambda: jnp.zeros_like(x),
      "jnp.ones_like(u), u uncommitted": lambda: jnp.ones_like(u),
      "jnp.eye(8, k=k, device=d), 3 offsets": (
          lambda: jnp.eye(8, k=next(offsets), device=d)),
      "jnp.asarray(u, device=d)": lambda: jnp.asarray(u, device=d),
      "jnp.arange(16, device=d)": lambda: jnp.arange(16, device=d),
  }


def _tags():
  return (("committed cpu:3", inputs(True)), ("uncommitted", inputs(False)))


def dispatch(results, counts):
  for tag, put in _tags():
    for name, (f, args) in dispatch_cases(put).items():
      jax.block_until_ready(f(*args))
      jax.block_until_ready(f(*args))
      n = 300 if name == "pytree of 100 leaves" else 2000
      with jtu.count_pjit_cpp_cache_miss() as misses:
        results[f"dispatch: {name} ({tag})"] = per_call(lambda: f(*args), n)
      counts[f"python-path calls, {name} ({tag})"] = misses()
      jax.block_until_ready(f(*args))


def eager(results):
  for tag, put in _tags():
    for name, fn in eager_cases(put).items():
      for _ in range(20):
        fn()
      results[f"eager: {name} ({tag})"] = per_call(fn, 1000)
  for name, fn in creation_cases().items():
    for _ in range(60):
      jax.block_until_ready(fn())
    results[f"eager: {name}"] = per_call(fn, 200)


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
    # The first trace also fills the caches of the jnp functions used inside
    # (nested jits); it is a warm-up, not a sample.
    jax.jit(make()).trace(*args).lower()
    samples = []
    for _ in range(REPEATS):
      f = jax.jit(make())          # a new function: its own trace and lowering
      gc.collect()
      t = time.perf_counter()
      f.trace(*args).lower()
      samples.append(time.perf_counter() - t)
    results[f"trace+lower: {name}"] = samples


def _first_call_function(traces=None):
  def g(a):
    if traces is not None:
      traces.append(1)
    return jnp.sin(a) * 2 + a.sum()
  return jax.jit(g)


def _first_call_args(k):
  args = [jax.device_put(jnp.arange(64.0), D[i]) for i in range(k)]
  jax.block_until_ready(args)
  return args


def first_calls(results, counts, k=8):
  samples = []
  for _ in range(max(2, REPEATS // 2)):
    traces = []
    f = _first_call_function(traces)
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
  # What one trace and one lowering cost, for a device-polymorphic reuse.
  a = jax.device_put(jnp.arange(64.0), D[5])
  tr, lo = [], []
  for _ in range(REPEATS):
    f = _first_call_function()
    t = time.perf_counter()
    traced = f.trace(a)
    tr.append(time.perf_counter() - t)
    t = time.perf_counter()
    traced.lower()
    lo.append(time.perf_counter() - t)
  results["one trace of the first-call program"] = tr
  results["one lowering of the first-call program"] = lo


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
      for _ in range(20):
        jax.block_until_ready(fn(x))
      with jtu.count_jit_compilation_cache_miss() as compiles:
        results[f"cross-device: {name} ({kind})"] = per_call(
            lambda: fn(x), 100 if kind == "eager" else 500)
        jax.block_until_ready(fn(x))
      counts[f"compiles in steady state, {name} ({kind})"] = compiles()


def memory(results):
  progs = programs()
  gc.collect()
  before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
  for name in ("200-layer MLP grad", "program of ~5,000 equations"):
    make, args = progs[name]
    jax.jit(make()).trace(*args).lower()
  after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
  results["peak RSS after the large traces (MiB)"] = [after / 1024]
  results["RSS growth during the large traces (MiB)"] = [(after - before) / 1024]


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
    mark(None)
    for _ in range(n):
      fn()
    mark((label, n))

  for tag, put in _tags():
    for name, (f, args) in dispatch_cases(put).items():
      for _ in range(50):
        jax.block_until_ready(f(*args))
      block(f"dispatch: {name} ({tag})", lambda: f(*args), 500)
      jax.block_until_ready(f(*args))
    for name, fn in eager_cases(put).items():
      for _ in range(50):
        fn()
      block(f"eager: {name} ({tag})", fn, 500)
  for name, fn in creation_cases().items():
    for _ in range(60):
      jax.block_until_ready(fn())
    block(f"eager: {name}", fn, 100)
  for name, (make, args) in programs().items():
    jax.jit(make()).trace(*args).lower()
    f = jax.jit(make())
    gc.collect()
    block(f"trace+lower: {name}", lambda: f.trace(*args).lower())
  f = _first_call_function()
  args = _first_call_args(8)
  block("first call on 8 new devices (trace+lower+compile)",
        lambda: [jax.block_until_ready(f(a)) for a in args])
  x = jax.device_put(jnp.linspace(0.0, 1.0, 64), D[1])
  for name, impls in cross_device_cases().items():
    for kind, fn in impls.items():
      for _ in range(20):
        jax.block_until_ready(fn(x))
      block(f"cross-device: {name} ({kind})",
            lambda: jax.block_until_ready(fn(x)), 50)


def main():
  which = sys.argv[1] if len(sys.argv) > 1 else "all"
  results, counts = {}, {}
  if which == "instructions":
    labels = []
    instructions(labels)
    print(json.dumps({"version": jax.__version__, "labels": labels}))
    return
  if which == "memory":
    memory(results)
  else:
    dispatch(results, counts)
    eager(results)
    trace_and_lower(results, counts)
    first_calls(results, counts)
    cross_device(results, counts)
  print(json.dumps({"version": jax.__version__, "results": results,
                    "counts": counts}))


if __name__ == "__main__":
  main()
