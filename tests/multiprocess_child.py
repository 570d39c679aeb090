# One process of the 2-process test in tests/multiprocess_test.py (not a test
# file itself: pytest collects only *_test.py).
#
#   python multiprocess_child.py PORT PROCESS_ID
#
# Starts JAX's multi-controller runtime (gloo CPU collectives, 4 local CPU
# devices, 8 global), runs array-API code on a global array and on a local
# device, eagerly and under jax.jit, and prints one line
# `MULTIPROCESS_RESULT <json>` with what it saw. Every check records its
# outcome (a value or the error) instead of raising, so that both processes
# reach the same collectives and the parent can compare them. Exit status:
# 0 after printing the results, 3 when jax.distributed could not start.
#
# The parent sets XLA_FLAGS=--xla_force_host_platform_device_count=4 and
# JAX_PLATFORMS=cpu in the environment.

import json
import sys
import traceback

RESULT_PREFIX = "MULTIPROCESS_RESULT "
INIT_FAILED = 3


def _error(e):
  return f"{type(e).__name__}: {e}".strip()[:2000]


def _sharding_info(a):
  s = a.sharding
  info = {
      "sharding_type": type(s).__name__,
      "device_ids": sorted(d.id for d in s.device_set),
  }
  if hasattr(s, "spec"):
    info["spec"] = str(s.spec)
    # P('x') and P('x', None) are the same sharding of a 2-d array.
    entries = list(s.spec) + [None] * (a.ndim - len(s.spec))
    info["spec_normalized"] = [None if e is None else str(e) for e in entries]
  mesh = getattr(s, "mesh", None)
  if mesh is not None:
    info["mesh_shape"] = {str(k): int(v) for k, v in dict(mesh.shape).items()}
    info["axis_names"] = [str(n) for n in mesh.axis_names]
  return info


def _device_str(dev):
  """What `x.device` gave: a Device (by id) or a Sharding (its str)."""
  import jax
  if isinstance(dev, jax.Device):
    return f"Device(id={dev.id})"
  return f"{type(dev).__name__}: {dev}"


def _run(fn):
  """(outcome, array or None): fn() and its error, if any, caught."""
  try:
    out = fn()
    out.block_until_ready()
    return {"ok": True}, out
  except Exception as e:  # pylint: disable=broad-except
    return {"ok": False, "error": _error(e)}, None


def global_checks(axis_type_name):
  """(a): array-API code on x = arange(16.) sharded P('x') over 8 devices.

  The mesh's axis is of type `axis_type_name` ("Explicit", the default of
  jax.make_mesh, or "Auto").
  """
  import array_api_compat
  import jax
  import numpy as np
  from jax.experimental import multihost_utils
  from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

  mesh = jax.make_mesh((8,), ("x",),
                       axis_types=(getattr(AxisType, axis_type_name),))
  sharding = NamedSharding(mesh, P("x"))
  data = np.arange(16, dtype=np.float32)
  x = jax.make_array_from_callback(data.shape, sharding, lambda idx: data[idx])

  res = {
      "input": _sharding_info(x),
      "input_fully_addressable": bool(x.is_fully_addressable),
      "input_value": np.asarray(
          multihost_utils.process_allgather(x, tiled=True)).tolist(),
  }
  try:
    res["eager_x_device"] = _device_str(x.device)
  except Exception as e:  # pylint: disable=broad-except
    res["eager_x_device"] = "error: " + _error(e)

  def cumulative_sum(xp, a):
    if hasattr(xp, "cumulative_sum"):
      return xp.cumulative_sum(a)
    return xp.cumsum(a)

  cases = {
      "sum": lambda xp, a: xp.sum(a),
      "mean": lambda xp, a: xp.mean(a),
      "affine": lambda xp, a: a * 2 + 1,
      "cumulative_sum": cumulative_sum,
      "zeros_like": lambda xp, a: xp.zeros_like(a),
      "ones_device": lambda xp, a: xp.ones(16, device=a.device),
      # device= of x.device for other shapes: the sharding is fitted to them.
      "ones_12": lambda xp, a: xp.ones(12, device=a.device),
      "zeros_16x3": lambda xp, a: xp.zeros((16, 3), device=a.device),
  }

  traced_device = {}

  def with_namespace(name, case):
    def f(a):
      xp = array_api_compat.array_namespace(a)
      res.setdefault("namespace", xp.__name__)
      if name == "ones_device" and isinstance(a, jax.core.Tracer):
        try:
          traced_device["value"] = _device_str(a.device)
        except Exception as e:  # pylint: disable=broad-except
          traced_device["value"] = "error: " + _error(e)
      return case(xp, a)
    return f

  outcomes, arrays = {}, {}
  for name, case in cases.items():
    f = with_namespace(name, case)
    for mode, g in (("eager", f), ("jit", jax.jit(f))):
      outcomes[(name, mode)], arrays[(name, mode)] = _run(lambda g=g: g(x))
  res["jit_x_device"] = traced_device.get("value")

  # Read the values back. A result that spans both processes is gathered with
  # a collective, which every process must run: the processes first agree on
  # which results they all have (0: failed, 1: spans processes, 2: local).
  keys = sorted(outcomes)
  kind = np.array(
      [0 if arrays[k] is None else 2 if arrays[k].is_fully_addressable else 1
       for k in keys], dtype=np.int32)
  kinds = np.asarray(multihost_utils.process_allgather(kind))
  for k, lo, hi in zip(keys, kinds.min(axis=0), kinds.max(axis=0)):
    o, a = outcomes[k], arrays[k]
    if a is None:
      continue
    o.update(_sharding_info(a))
    o["shape"] = list(a.shape)
    o["dtype"] = str(a.dtype)
    o["fully_replicated"] = bool(a.is_fully_replicated)
    o["fully_addressable"] = bool(a.is_fully_addressable)
    if lo == hi == 1:
      o["value"] = np.asarray(
          multihost_utils.process_allgather(a, tiled=True)).tolist()
    elif lo == hi == 2:
      o["value"] = np.asarray(a).tolist()  # this process's own array
    else:
      o["value_error"] = ("not read back: failed on another process or "
                          "spans processes on one and not the other")

  res["cases"] = {}
  for (name, mode), o in outcomes.items():
    res["cases"].setdefault(name, {})[mode] = o
  return res


def local_checks():
  """(b): a single-device jit on this process's second local device."""
  import jax
  import jax.numpy as jnp
  import numpy as np

  d = jax.local_devices()[1]
  y = jax.device_put(np.arange(4, dtype=np.float32), d)
  res = {
      "device_id": d.id,
      "device_process_index": d.process_index,
      "y_devices": sorted(e.id for e in y.devices()),
      "y_committed": bool(y.committed),
  }

  def info(a):
    return {
        "value": np.asarray(a).tolist(),
        "dtype": str(a.dtype),
        "device_ids": sorted(e.id for e in a.devices()),
        "committed": bool(a.committed),
    }

  seen = {}

  def device_of(a):
    dev = a.device
    seen["device"] = _device_str(dev)
    seen["equals_d"] = bool(dev == d)
    return a + 0

  cases = {
      "device_of": device_of,
      "zeros_device": lambda a: jnp.zeros(3, device=a.device),
      "times_two": lambda a: a * 2,
  }
  res["cases"] = {}
  for name, f in cases.items():
    for mode, g in (("eager", f), ("jit", jax.jit(f))):
      seen.clear()
      o, out = _run(lambda g=g: g(y))
      if out is not None:
        o.update(info(out))
      if name == "device_of":
        o["seen_device"] = seen.get("device")
        o["seen_equals_d"] = seen.get("equals_d")
      res["cases"].setdefault(name, {})[mode] = o
  return res


def main():
  port, pid = sys.argv[1], int(sys.argv[2])
  import jax
  try:
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=f"127.0.0.1:{port}", num_processes=2,
        process_id=pid, initialization_timeout=60)
    # Touch the backend: a broken collectives setup shows up here.
    jax.devices()
  except Exception as e:  # pylint: disable=broad-except
    traceback.print_exc()
    print(RESULT_PREFIX + json.dumps({"init_error": _error(e)}), flush=True)
    sys.exit(INIT_FAILED)

  res = {
      "process_id": pid,
      "process_index": jax.process_index(),
      "process_count": jax.process_count(),
      "device_count": jax.device_count(),
      "local_device_count": jax.local_device_count(),
      "local_device_ids": [d.id for d in jax.local_devices()],
      "global_device_ids": sorted(d.id for d in jax.devices()),
  }
  res["global"] = {t: global_checks(t) for t in ("Explicit", "Auto")}
  res["local"] = local_checks()
  print(RESULT_PREFIX + json.dumps(res), flush=True)
  jax.distributed.shutdown()


if __name__ == "__main__":
  main()
