"""The array-API fast-exit pattern under jit, upstream and fork side by side.

  .venv/bin/python examples/fast_exit.py

Array-API code often returns early with a freshly created array on the input's
device: `return xp.zeros(1, dtype=x.dtype, device=x.device)`. Upstream, inside
jit, `x.device` raises AttributeError; through array-api-compat's
`device(x)` it is None and the result lands on the default device. In the fork
it lands where x is.
"""

from _compare import main


def cases():
  import jax
  import jax.numpy as jnp

  x3 = jax.device_put(jnp.arange(4.0), jax.devices()[3])

  def norm(x, *, early):
    xp = x.__array_namespace__()
    if early:                                  # e.g. an empty input
      return xp.zeros(1, dtype=x.dtype, device=x.device)
    return xp.sqrt(xp.sum(x * x, keepdims=True))

  def norm_compat(x, *, early):
    import array_api_compat
    xp = array_api_compat.array_namespace(x)
    if early:
      return xp.zeros(1, dtype=x.dtype, device=array_api_compat.device(x))
    return xp.sqrt(xp.sum(x * x, keepdims=True))

  return [
      ("eager, early exit", lambda: norm(x3, early=True)),
      ("jit, early exit via x.device",
       lambda: jax.jit(norm, static_argnames="early")(x3, early=True)),
      ("jit, early exit via array_api_compat.device(x)",
       lambda: jax.jit(norm_compat, static_argnames="early")(x3, early=True)),
      ("jit, no early exit",
       lambda: jax.jit(norm, static_argnames="early")(x3, early=False)),
  ]


if __name__ == "__main__":
  main(cases, __file__)
