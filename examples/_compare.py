"""Runs named cases with this interpreter's jax, and with upstream's beside it.

Each example calls `main(cases)`, where `cases()` returns (name, thunk)
pairs. With --upstream PYTHON (default: ../.venv-upstream/bin/python when it
exists) the example runs itself again under that interpreter and prints one
table: where each result landed (device, committed), or the error raised.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=8")

_UPSTREAM = Path(__file__).resolve().parent.parent / ".venv-upstream" / "bin" / "python"


def describe(result):
  import jax
  if result is None:
    return "returned None"
  if isinstance(result, str):
    return result
  if isinstance(result, jax.Array):
    dev = result.device
    return f"{dev.platform}:{dev.id}{' committed' if result.committed else ''}"
  if hasattr(result, "platform") and hasattr(result, "id"):
    return f"returned {result.platform}:{result.id}"
  return repr(result)


def _run(cases):
  out = []
  for name, thunk in cases():
    try:
      res = describe(thunk())
    except Exception as e:  # noqa: BLE001 -- the error is the result
      first = str(e).strip().splitlines()[0] if str(e).strip() else ""
      res = f"{type(e).__name__}: {first[:48]}..."
    out.append((name, res))
  return out


def main(cases, script):
  ap = argparse.ArgumentParser()
  ap.add_argument("--upstream", default=str(_UPSTREAM) if _UPSTREAM.exists()
                  else None, help="python of an upstream-jax environment")
  ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
  args = ap.parse_args()
  import jax
  here = _run(cases)
  if args.json:
    print(json.dumps({"version": jax.__version__, "rows": here}))
    return
  cols = [(f"jax {jax.__version__}", dict(here))]
  if args.upstream and os.path.abspath(args.upstream) != os.path.abspath(
      sys.executable):
    r = subprocess.run([args.upstream, script, "--json"], capture_output=True,
                       text=True, check=True)
    up = json.loads(r.stdout.strip().splitlines()[-1])
    cols.insert(0, (f"upstream jax {up['version']}", dict(up["rows"])))
  names = [n for n, _ in here]
  w0 = max(map(len, names))
  widths = [max(len(h), *(len(v) for v in c.values())) for h, c in cols]
  print("  ".join([" " * w0] + [h.ljust(w) for (h, _), w in zip(cols, widths)]))
  for n in names:
    print("  ".join([n.ljust(w0)] +
                    [c[n].ljust(w) for (_, c), w in zip(cols, widths)]).rstrip())
