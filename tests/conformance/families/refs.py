"""Mutable array references in computations that span devices."""

import jax
import jax.numpy as jnp

from conformance.families import dev


def written_on_another_device(x):
  r = jax.new_ref(jnp.zeros(x.shape, x.dtype, device=dev()))
  r[...] = jax.device_put(x, dev()) * 2
  return r[...]


def used_after_a_transfer(x):
  r = jax.new_ref(x * 1)
  y = jax.device_put(x, dev()) * 2
  r[...] = r[...] * 3
  return r[...], y


def updated_then_moved(a, b):
  r = jax.new_ref(a * 1)
  r[...] = r[...] + b
  return r[...], jax.device_put(b, dev())
