"""Sequences of arrays given to jnp.array and jnp.asarray with device=."""

import jax.numpy as jnp
import numpy as np

from conformance.families import dev


def array_of_a_list(x):
  return jnp.array([x, x], device=dev())


def array_of_a_tuple(x):
  return jnp.array((x, x * 2), device=dev())


def array_of_a_nested_list(x):
  return jnp.array([[x], [x]], device=dev())


def asarray_with_numpy(x):
  return jnp.asarray([x, np.ones(x.shape, x.dtype)], device=dev())


def asarray_with_scalars(x):
  return jnp.asarray([x.ravel()[0], 2.0, np.float32(-0.0)], device=dev())


def array_of_two_arguments(a, b):
  return jnp.array([a, b], device=dev())
