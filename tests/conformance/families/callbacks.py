"""Callbacks and effects in computations that span devices."""

import jax
from jax.experimental import io_callback
import numpy as np

from conformance.families import dev

_calls = []


def _ignore(*args):
  del args


def _reset(v):
  del v
  _calls.clear()
  return np.int32(0)


def _next(v):
  _calls.append(v)
  return np.int32(len(_calls))


def debug_callback_on_two_devices(x):
  jax.debug.callback(_ignore, x, jax.device_put(x, dev()))
  return x * 2


def ordered_debug_callback_on_two_devices(x):
  jax.debug.callback(_ignore, x, jax.device_put(x, dev()), ordered=True)
  return x * 2


def ordered_io_callbacks_across_devices(x):
  # Each returns its place in the order the callbacks ran: program order.
  count = jax.ShapeDtypeStruct((), np.int32)
  io_callback(_reset, count, x.sum(), ordered=True)
  a = io_callback(_next, count, x.sum(), ordered=True)
  b = io_callback(_next, count, jax.device_put(x, dev()).sum(), ordered=True)
  c = io_callback(_next, count, (x * 2).sum(), ordered=True)
  return a, b, c
