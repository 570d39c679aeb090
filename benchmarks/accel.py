"""The accelerator table: one process of one environment (fork or upstream).

Run on a machine with a TPU or a GPU by tools/accel_bench.py (which alternates
the fork and upstream in separate processes and writes the table); it prints
one JSON object: the device, the versions and, per measurement, the best of
its repetitions in seconds. `--platform cpu` runs the same on the CPU (a smoke
of the script where no accelerator is lent; the figures mean nothing there).

What it measures, on the accelerator `a` (the default device) and the host's
CPU `c`: steady dispatch of a jitted `x + 1`; eager creation with `device=a`
and with `device=c` (`zeros`, `full` with a new value each call), and
`zeros_like` of an array committed to `a`; eager `x + y`; a compute-bound
training step (the gradient of an MLP of width 2048 and depth 8 on a batch
of 512, float32) and its first call (trace, lowering and compile); and a jit
called on arguments committed to the CPU while the accelerator is the
default device. And where the created arrays and that jit's results land.
"""

import argparse
import importlib.metadata
import itertools
import json
import platform
import time

import jax
import jax.numpy as jnp
from jax._src import test_util as jtu


def best(fn, n, repeats):
  """The best over `repeats` of the mean time of n calls (blocking at the end)."""
  times = []
  for _ in range(repeats):
    t = time.perf_counter()
    for _ in range(n):
      out = fn()
    jax.block_until_ready(out)
    times.append((time.perf_counter() - t) / n)
  return min(times)


def name(device):
  return f"{device.platform}:{device.id}"


def mlp_params(width, depth, key):
  keys = jax.random.split(key, depth)
  return [(jax.random.normal(k, (width, width), jnp.float32) / width ** 0.5,
           jnp.zeros(width, jnp.float32)) for k in keys]


def mlp_loss(params, x):
  for w, b in params:
    x = jnp.tanh(x @ w + b)
  return jnp.mean(x ** 2)


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--label", required=True)
  ap.add_argument("--platform", default="tpu")
  ap.add_argument("--repeats", type=int, default=5)
  ap.add_argument("--mlp", default="2048,8,512",
                  help="width,depth,batch of the training step")
  args = ap.parse_args()
  a = jax.devices(args.platform)[0]
  c = jax.devices("cpu")[0]
  r = args.repeats
  results, facts = {}, {}

  x = jax.device_put(jnp.arange(1024.0), a)
  y = jax.device_put(jnp.ones(1024), a)
  f = jax.jit(lambda v: v + 1)
  f(x).block_until_ready()
  with jtu.count_pjit_cpp_cache_miss() as misses:
    results["dispatch: jit(x + 1)"] = best(lambda: f(x), 1000, r)
  facts[f"calls of jit(x + 1) on jit's Python path (of {1000 * r})"] = (
      misses())
  values = itertools.count(0.5)
  for d, letter in ((a, "a"), (c, "c")):
    jnp.zeros(1024, device=d).block_until_ready()
    results[f"eager: jnp.zeros(1024, device={letter})"] = best(
        lambda d=d: jnp.zeros(1024, device=d), 200, r)
    jnp.full(1024, next(values), device=d).block_until_ready()
    results[f"eager: jnp.full(1024, v, device={letter}), new v each call"] = (
        best(lambda d=d: jnp.full(1024, next(values), device=d), 200, r))
    facts[f"jnp.zeros(1024, device={letter}) lands on"] = name(
        jnp.zeros(1024, device=d).device)
  jnp.zeros_like(x).block_until_ready()
  results["eager: jnp.zeros_like(x), x committed to a"] = best(
      lambda: jnp.zeros_like(x), 200, r)
  (x + y).block_until_ready()
  results["eager: x + y"] = best(lambda: x + y, 1000, r)

  width, depth, batch = map(int, args.mlp.split(","))
  mlp = f"MLP grad step ({width} wide, {depth} deep, batch {batch})"
  params = jax.device_put(mlp_params(width, depth, jax.random.key(0)), a)
  batch_x = jax.device_put(jnp.ones((batch, width), jnp.float32), a)
  step = jax.jit(jax.grad(mlp_loss))
  t = time.perf_counter()
  jax.block_until_ready(step(params, batch_x))
  results[f"{mlp}: first call"] = time.perf_counter() - t
  results[mlp] = best(lambda: step(params, batch_x), 20, r)

  xc = jax.device_put(jnp.arange(1024.0), c)
  h = jax.jit(lambda a: a * 2 + 1)
  out = h(xc)
  out.block_until_ready()
  facts["jit of CPU-committed inputs lands on"] = name(out.device)
  with jtu.count_pjit_cpp_cache_miss() as misses:
    results["dispatch: jit on CPU-committed inputs (a default)"] = best(
        lambda: h(xc), 1000, r)
  facts["calls of that jit on jit's Python path (of "
        f"{1000 * r})"] = misses()

  try:
    plugin = f", libtpu {importlib.metadata.version('libtpu')}"
  except importlib.metadata.PackageNotFoundError:
    plugin = ""
  print(json.dumps({
      "label": args.label, "jax": jax.__version__,
      "jaxlib": importlib.metadata.version("jaxlib"), "plugin": plugin,
      "python": platform.python_version(),
      "device": getattr(a, "device_kind", str(a)), "platform": a.platform,
      "results": results, "facts": facts}))


if __name__ == "__main__":
  main()
