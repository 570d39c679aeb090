"""Donated arguments of computations that span devices."""

import jax
import jax.numpy as jnp

from conformance.families import dev


def read_by_a_stage_after_its_transfer(x):
  return jax.device_put(x, dev()) * 2, x + 1


def read_by_stages_on_two_devices(x):
  return jax.device_put(jnp.sin(x), dev()) + jax.device_put(x, dev())


def returned_as_it_is(x):
  return x, jax.device_put(x, dev())


for _f in (read_by_a_stage_after_its_transfer, read_by_stages_on_two_devices,
           returned_as_it_is):
  _f.jit_kwargs = dict(donate_argnums=0)
