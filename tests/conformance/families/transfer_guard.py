"""Transfers under jax.transfer_guard("disallow"): the user's are explicit."""

import jax
import jax.numpy as jnp

from conformance.families import dev


def _disallow():
  return jax.transfer_guard("disallow")


def explicit_moves_of_an_argument(x):
  return jax.device_put(x, dev()), jax.device_put(x, dev(2)), x + x


def explicit_move_then_compute(x):
  return jnp.sin(jax.device_put(x, dev())), x + x


def implicit_move(a, b):
  # With b uncommitted and a committed (mode M), b moves implicitly.
  return a + jnp.sin(b), jax.device_put(a, dev())


for _f in (explicit_moves_of_an_argument, explicit_move_then_compute,
           implicit_move):
  _f.call_context = _disallow
