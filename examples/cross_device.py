"""One jitted computation on several devices, as eager mode runs it.

  .venv/bin/python examples/cross_device.py

A model runs on an accelerator (here cpu:3 of 8 virtual devices) and hands
one step to another device (cpu:0, say the host CPU), then carries on where
it was. Eagerly that is two `device_put`s. Upstream, inside `jax.jit`, the
`device_put`s are silently dropped: everything runs on cpu:3. The fork runs
the jitted function as per-device stages with copies between them, so every
value is where eager mode puts it; a transfer inside a loop body is a clear
error.
"""

from _compare import main


def cases():
  import jax
  import jax.numpy as jnp
  from jax import lax

  d = jax.devices()
  x3 = jax.device_put(jnp.linspace(-1.0, 1.0, 8), d[3])
  seen = {}

  def model(x):
    h = jnp.tanh(x * 3.0)                       # on x's device
    on_host = jax.device_put(h, d[0])           # a step on cpu:0 ...
    ranks = jnp.argsort(jnp.argsort(on_host))   # ... e.g. a sort there
    seen["ranks"] = getattr(ranks, "device", None)
    back = jax.device_put(ranks, d[3])          # ... and back
    return h * back, ranks

  def transfer_in_loop(x):
    return lax.fori_loop(0, 2, lambda i, c: jax.device_put(c, d[0]) + 1, x)

  def where(i):
    return lambda: jax.jit(model)(x3)[i]

  def ranks_read_in_trace():
    seen.clear()
    jax.jit(lambda x: model(x)).trace(x3)     # a new function: traced anew
    return seen["ranks"]

  return [
      ("eagerly: the result", lambda: model(x3)[0]),
      ("eagerly: the ranks", lambda: model(x3)[1]),
      ("jit: the result", where(0)),
      ("jit: the ranks", where(1)),
      ("jit: ranks.device read while tracing", ranks_read_in_trace),
      ("jit: device_put inside a loop body",
       lambda: jax.jit(transfer_in_loop)(x3)),
  ]


if __name__ == "__main__":
  main(cases, __file__)
