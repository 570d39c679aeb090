"""The GPU table: one process of one environment (fork or upstream).

Run on a machine with a GPU by tools/gpu_bench.py (which alternates the fork
and upstream in separate processes and writes the table); it prints one JSON
object: the device, the versions and, per measurement, the best of its
repetitions in seconds. `--platform cpu` runs the same on the CPU (a smoke of
the script where no GPU is lent; the figures mean nothing there).

What it measures, on the GPU `g` (the default device) and the host's CPU `c`:
steady dispatch of a jitted `x + 1`; eager creation with `device=g`
(`zeros`, `full` with a new value each call, `zeros_like` of a committed
array); eager `x + y`; a compute-bound training step (the gradient of an MLP
of width 2048 and depth 8 on a batch of 512, float32) and its first call
(trace, lowering and compile); and a jit called on arguments committed to the
CPU while the GPU is the default device.
"""

import argparse
import itertools
import json
import time

import jax
import jax.numpy as jnp


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
  ap.add_argument("--platform", default="gpu")
  ap.add_argument("--repeats", type=int, default=5)
  ap.add_argument("--mlp", default="2048,8,512",
                  help="width,depth,batch of the training step")
  args = ap.parse_args()
  g = jax.devices(args.platform)[0]
  c = jax.devices("cpu")[0]
  r = args.repeats
  results, facts = {}, {}

  x = jax.device_put(jnp.arange(1024.0), g)
  y = jax.device_put(jnp.ones(1024), g)
  f = jax.jit(lambda a: a + 1)
  f(x).block_until_ready()
  results["dispatch: jit(x + 1)"] = best(lambda: f(x), 1000, r)
  jnp.zeros(1024, device=g).block_until_ready()
  results["eager: jnp.zeros(1024, device=g)"] = best(
      lambda: jnp.zeros(1024, device=g), 200, r)
  values = itertools.count(0.5)
  jnp.full(1024, next(values), device=g).block_until_ready()
  results["eager: jnp.full(1024, v, device=g), new v each call"] = best(
      lambda: jnp.full(1024, next(values), device=g), 200, r)
  jnp.zeros_like(x).block_until_ready()
  results["eager: jnp.zeros_like(x), x committed to g"] = best(
      lambda: jnp.zeros_like(x), 200, r)
  (x + y).block_until_ready()
  results["eager: x + y"] = best(lambda: x + y, 1000, r)
  facts["jnp.zeros(1024, device=g) lands on"] = str(
      jnp.zeros(1024, device=g).device)

  width, depth, batch = map(int, args.mlp.split(","))
  mlp = f"MLP grad step ({width} wide, {depth} deep, batch {batch})"
  params = jax.device_put(mlp_params(width, depth, jax.random.key(0)), g)
  batch_x = jax.device_put(jnp.ones((batch, width), jnp.float32), g)
  step = jax.jit(jax.grad(mlp_loss))
  t = time.perf_counter()
  jax.block_until_ready(step(params, batch_x))
  results[f"{mlp}: first call"] = time.perf_counter() - t
  results[mlp] = best(lambda: step(params, batch_x), 20, r)

  xc = jax.device_put(jnp.arange(1024.0), c)
  h = jax.jit(lambda a: a * 2 + 1)
  out = h(xc)
  out.block_until_ready()
  facts["jit of CPU-committed inputs lands on"] = str(out.device)
  results["dispatch: jit on CPU-committed inputs (GPU default)"] = best(
      lambda: h(xc), 1000, r)

  print(json.dumps({
      "label": args.label, "jax": jax.__version__,
      "device": getattr(g, "device_kind", str(g)), "platform": g.platform,
      "results": results, "facts": facts}))


if __name__ == "__main__":
  main()
