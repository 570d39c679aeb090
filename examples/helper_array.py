"""A helper array made on another device than the input, under jit.

  .venv/bin/python examples/helper_array.py

A function whose input lives on one device (a GPU, here cpu:3 of 8 virtual
devices) builds a helper array, e.g. an index table. Made on the input's
device, or left uncommitted, it is part of the computation on that device.
Made explicitly on another device, upstream silently drops the request or
runs on the wrong device. The fork does what eager mode does: a helper on
another device that meets x is an error naming both devices and the line;
one that never meets x is made where it was asked for (the computation then
spans two devices and runs as two stages, see examples/cross_device.py).
"""

from _compare import main


def cases():
  import jax
  import jax.numpy as jnp

  d = jax.devices()
  x3 = jax.device_put(jnp.arange(6.0), d[3])

  def on_input_device(x):
    idx = jnp.arange(x.shape[0], device=x.device)[::-1]
    return x[idx]

  def uncommitted_helper(x):
    return x * jnp.linspace(0.0, 1.0, x.shape[0])

  def on_other_device(x):                    # helper explicitly on cpu:0
    return x * jnp.ones(x.shape, device=d[0])

  def helper_alone_on_other_device(x):       # only the helper is returned
    return jnp.ones(x.shape, device=d[0])

  return [
      ("helper with device=x.device", lambda: jax.jit(on_input_device)(x3)),
      ("uncommitted helper", lambda: jax.jit(uncommitted_helper)(x3)),
      ("helper on cpu:0, combined with x@cpu:3",
       lambda: jax.jit(on_other_device)(x3)),
      ("helper on cpu:0, x@cpu:3 unused",
       lambda: jax.jit(helper_alone_on_other_device)(x3)),
      ("eagerly: helper on cpu:0 combined with x@cpu:3",
       lambda: on_other_device(x3)),
  ]


if __name__ == "__main__":
  main(cases, __file__)
