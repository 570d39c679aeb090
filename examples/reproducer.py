"""jax-ml/jax#26000 and the misplacements around it, upstream and fork side by side.

  .venv/bin/python examples/reproducer.py [--upstream .venv-upstream/bin/python]

Runs each case of the issue and of the misplacements around it (the table in
docs/jep/26000-device-tracing.md, "Motivation") on 8 virtual CPU devices
with this interpreter's jax and with upstream's (.venv-upstream, when it
exists), and prints, after a legend, where each result landed (device, and
whether it is committed), or the error raised, in full.
"""

from _compare import main


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
      ("device_put(a, cpu:2) + 1, a@cpu:1",
       lambda: jax.jit(lambda a: jax.device_put(a, d[2]) + 1)(a1)),
      ("a + b, a@cpu:1, b@cpu:2",
       lambda: jax.jit(lambda a, b: a + b)(a1, b2)),
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


if __name__ == "__main__":
  main(cases, __file__)
