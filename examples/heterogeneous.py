"""jax-ml/jax#26000 as reported: an accelerator by default, arrays on the CPU.

  .venv/bin/python examples/heterogeneous.py [--simulate]

With `x = jax.device_put(jnp.arange(4.), jax.devices('cpu')[0])` on a machine
whose default device is an accelerator (a GPU or a TPU), checks under jit,
and eagerly for comparison, that `x.device` is the CPU, that
`jnp.zeros(3, device=x.device)` lands on the CPU, that an unused CPU argument
places the computation on the CPU, and that `jax.device_put(x, accelerator)`
puts its result on the accelerator. Prints a legend, the accelerator, one
table (case, result device, committed, expected, OK/FAIL) and every error in
full, wrapped to 100 columns, and exits 1 on any FAIL. When the default
device is the CPU it says so and exits 0; with --simulate it runs the same
checks on 8 virtual CPU devices, cpu:0 (the default device) standing for the
accelerator and cpu:3 for the CPU. Leave JAX_PLATFORMS unset (or name the
accelerator's platform and cpu, as in `tpu,cpu`).
"""

import argparse
import os
import sys

from _compare import wrap

LEGEND = """How to read this. Each case runs under jax.jit ("jit:") or eagerly ("eager:"). Eager mode is JAX without jax.jit: each operation runs at once, on the device of its committed inputs (uncommitted inputs move there), or on the default device when none is committed; under jax.jit a result should land where eager mode puts it.
"result device" is where the result landed, or the device the case read. "committed" says whether the result array is committed to that device ("-" when the result is a device, not an array): placed there on purpose (by jax.device_put, by a device= argument, or as the result of a computation on committed inputs), so that it stays there and computations on it run there. An uncommitted array is on the default device and follows whatever computation it is used in. "expected" is where device tracing promises the result; a case is OK when the result is there, committed as expected. An error is a FAIL, and is printed in full after the table."""


def _name(device):
  return f"{device.platform}:{device.id}"


def default_accelerator():
  """(the default device, the CPU device beside it, None), or (None, None, why).

  `why` says that the default device is a CPU, or that no CPU device is
  beside the accelerator (JAX_PLATFORMS names its platform alone).
  tests/heterogeneous_test.py picks its devices with it too.
  """
  import jax
  accel = jax.devices()[0]
  if accel.platform == "cpu":
    return None, None, f"no accelerator: the default device is {_name(accel)}"
  try:
    cpu = jax.devices("cpu")[0]
  except RuntimeError as e:
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return None, None, (f"no CPU device beside the {accel.platform.upper()}: "
                        f"jax.devices('cpu') raised {type(e).__name__}: "
                        f"{first}")
  return accel, cpu, None


def cases(accel, cpu):
  """(case, thunk, expected device, expected committed) rows."""
  import jax
  import jax.numpy as jnp

  x = jax.device_put(jnp.arange(4.0), cpu)   # committed to the CPU
  y = jnp.arange(4.0)                        # uncommitted: default device
  a = _name(accel)

  def device_under_jit():
    seen = []
    jax.jit(lambda x: seen.append(x.device) or x + 1)(x)
    return seen[0]

  return [
      ("jit: x.device", device_under_jit, cpu, None),
      ("eager: x.device", lambda: x.device, cpu, None),
      ("jit: zeros(3, device=x.device)",
       lambda: jax.jit(lambda x: jnp.zeros(3, device=x.device))(x), cpu, True),
      ("eager: zeros(3, device=x.device)",
       lambda: jnp.zeros(3, device=x.device), cpu, True),
      ("jit: (x, y) -> y * 2, x unused",
       lambda: jax.jit(lambda x, y: y * 2)(x, y), cpu, True),
      ("eager: device_put(y, x.device) * 2",
       lambda: jax.device_put(y, x.device) * 2, cpu, True),
      ("jit: (x, y) -> y * 2, x uncommitted",
       lambda: jax.jit(lambda x, y: y * 2)(y, y), accel, False),
      ("eager: y * 2", lambda: y * 2, accel, False),
      (f"jit: device_put(x, {a})",
       lambda: jax.jit(lambda x: jax.device_put(x, accel))(x), accel, True),
      (f"eager: device_put(x, {a})",
       lambda: jax.device_put(x, accel), accel, True),
      (f"jit: device_put(x * 2, {a}) + 1",
       lambda: jax.jit(lambda x: jax.device_put(x * 2, accel) + 1)(x),
       accel, True),
      (f"eager: device_put(x * 2, {a}) + 1",
       lambda: jax.device_put(x * 2, accel) + 1, accel, True),
  ]


def check(accel, cpu):
  """Runs the cases and prints the table; returns the number of FAILs."""
  import jax
  rows, errors = [], []
  for case, thunk, device, committed in cases(accel, cpu):
    expected = _name(device) + ("" if committed is None else
                                " committed" if committed else " uncommitted")
    try:
      res = thunk()
      if isinstance(res, jax.Array):
        got_dev, got_committed = res.device, res.committed
      else:
        got_dev, got_committed = res, None
      ok = got_dev == device and got_committed == committed
      got = _name(got_dev)
      got_c = "-" if got_committed is None else str(got_committed)
    except Exception as e:  # noqa: BLE001 -- the error is the result
      ok, got_c = False, "-"
      errors.append((case, f"{type(e).__name__}: {str(e).strip()}"))
      got = f"{type(e).__name__} [{len(errors)}]"
    rows.append((case, got, got_c, expected, "OK" if ok else "FAIL"))
  head = ("case", "result device", "committed", "expected", "")
  widths = [max(len(r[i]) for r in rows + [head]) for i in range(5)]
  for r in [head] + rows:
    print(wrap("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()))
  for i, (case, message) in enumerate(errors, 1):
    print()
    print(wrap(f"[{i}] {case}: {message}", indent=4, first=""))
  return sum(r[-1] == "FAIL" for r in rows)


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--simulate", action="store_true",
                  help="no accelerator needed: cpu:0 stands for it, cpu:3 for "
                       "the CPU")
  args = ap.parse_args()
  if args.simulate:
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_force_host_platform_device_count=8")
    os.environ["JAX_PLATFORMS"] = "cpu"
  import jax
  print(wrap(LEGEND))
  print()
  print(f"jax {jax.__version__}")
  if args.simulate:
    accel, cpu = jax.devices()[0], jax.devices()[3]
    print(wrap(f"simulated: {_name(accel)} (the default device) stands for "
               f"the accelerator, {_name(cpu)} for the CPU"))
  else:
    accel, cpu, why = default_accelerator()
    if why is not None:
      platforms = os.environ.get("JAX_PLATFORMS")
      platforms = "unset" if platforms is None else repr(platforms)
      default = jax.devices()[0]
      if default.platform == "cpu":
        print(wrap(f"skipped: {why} (JAX_PLATFORMS {platforms}). --simulate "
                   "runs the checks on virtual CPU devices."))
        return 0
      print(wrap(f"FAIL: {why}; leave JAX_PLATFORMS ({platforms}) unset or "
                 f"name {default.platform},cpu"))
      return 1
    print(wrap(f"default device {_name(accel)}: a {accel.platform.upper()}, "
               f"{accel.device_kind}; CPU {_name(cpu)}"))
  failed = check(accel, cpu)
  print(f"\n{failed} FAIL" if failed else "\nall OK")
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main())
