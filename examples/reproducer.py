"""jax-ml/jax#26000 and the misplacements around it, upstream and fork side by side.

  .venv/bin/python examples/reproducer.py [--upstream .venv-upstream/bin/python]

Runs each case of DESIGN.md section 1 on 8 virtual CPU devices with this
interpreter's jax and, given --upstream, again with that interpreter's, and
prints one table: where each result landed (device, and whether it is
committed), or the error raised.
"""

import argparse
import json
import os
import subprocess
import sys

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=8")


def cases():
  import jax
  import jax.numpy as jnp

  d = jax.devices()
  x3 = jax.device_put(jnp.arange(3.0), d[3])       # committed to cpu:3
  u = jnp.arange(3.0)                              # uncommitted
  a1 = jax.device_put(1.0, d[1])
  b2 = jax.device_put(2.0, d[2])
  c3 = jax.device_put(jnp.ones(3), d[3])

  return [
      ("zeros(0, device=x.device), x@cpu:3",
       lambda: jax.jit(lambda x: jnp.zeros(0, device=x.device))(x3)),
      ("zeros(0, device=next(iter(x.devices()))), x@cpu:3",
       lambda: jax.jit(lambda x: jnp.zeros(
           0, device=next(iter(x.devices()))))(x3)),
      ("zeros(0), unused x@cpu:3",
       lambda: jax.jit(lambda x: jnp.zeros(0))(x3)),
      ("where(x > 0, zeros(1), ones(1)), x@cpu:3",
       lambda: jax.jit(lambda x: jnp.where(x > 0, jnp.zeros(1),
                                           jnp.ones(1)))(x3)),
      ("zeros(3, device=cpu:2), x uncommitted",
       lambda: jax.jit(lambda x: jnp.zeros(3, device=d[2]))(u)),
      ("device_put(x, cpu:2), x uncommitted",
       lambda: jax.jit(lambda x: jax.device_put(x, d[2]))(u)),
      ("x.to_device(cpu:2), x uncommitted",
       lambda: jax.jit(lambda x: x.to_device(d[2]))(u)),
      ("empty_like(x, device=cpu:2), x uncommitted",
       lambda: jax.jit(lambda x: jnp.empty_like(x, device=d[2]))(u)),
      ("lambda x, y: x, x@cpu:1, y@cpu:2",
       lambda: jax.jit(lambda x, y: x)(a1, b2)),
      ("y + c, c closed over @cpu:3, y uncommitted",
       lambda: jax.jit(lambda y: y + c3)(u)),
      ("array_api_compat.device(x), x@cpu:3",
       lambda: _compat_device(x3)),
  ]


def _compat_device(x):
  import jax
  try:
    import array_api_compat
  except ImportError:
    return "(array-api-compat not installed)"
  seen = []
  jax.jit(lambda x: seen.append(array_api_compat.device(x)) or x)(x)
  return seen[0]


def describe(result):
  import jax
  if result is None:
    return "returned None"
  if isinstance(result, str):
    return result
  if isinstance(result, jax.Array):
    dev = result.device
    return f"{dev.platform}:{dev.id}{' committed' if result.committed else ''}"
  if hasattr(result, "platform") and hasattr(result, "id"):
    return f"returned {result.platform}:{result.id}"
  return repr(result)


def run_here():
  out = []
  for name, thunk in cases():
    try:
      res = describe(thunk())
    except Exception as e:  # noqa: BLE001 -- the error is the result
      first = str(e).strip().splitlines()[0] if str(e).strip() else ""
      res = f"{type(e).__name__}: {first[:48]}..."
    out.append((name, res))
  return out


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--upstream", help="python of an upstream-jax environment")
  ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
  args = ap.parse_args()
  import jax
  here = run_here()
  if args.json:
    print(json.dumps({"version": jax.__version__, "rows": here}))
    return
  cols = [(f"jax {jax.__version__}", dict(here))]
  if args.upstream:
    r = subprocess.run([args.upstream, __file__, "--json"],
                       capture_output=True, text=True, check=True)
    up = json.loads(r.stdout.strip().splitlines()[-1])
    cols.insert(0, (f"upstream jax {up['version']}", dict(up["rows"])))
  names = [n for n, _ in here]
  w0 = max(map(len, names))
  widths = [max(len(h), *(len(v) for v in c.values())) for h, c in cols]
  print("  ".join([" " * w0] + [h.ljust(w) for (h, _), w in zip(cols, widths)]))
  for n in names:
    print("  ".join([n.ljust(w0)] +
                    [c[n].ljust(w) for (_, c), w in zip(cols, widths)]))


if __name__ == "__main__":
  main()
