"""The AOT stages (trace, lower, compile) of computations on one device."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from conformance.families import dev


def computed_where_committed(x):
  return x * 2, jnp.zeros(3)


def moved(x):
  return jax.device_put(x, dev()) * 2


def created_on_another_device(x):
  del x
  return jnp.zeros(3, device=dev())


def moved_to_a_one_device_mesh(x):
  mesh = Mesh(np.array([dev()]), ("i",))
  return jax.device_put(x, NamedSharding(mesh, P())) + 1, jnp.ones(3)


def spanning_two_devices(x):
  return jax.device_put(x, dev()) * 2, x + 1
