"""Runs named cases with this interpreter's jax, and with upstream's beside it.

Each example calls `main(cases, __file__)`, where `cases()` returns (name,
thunk) pairs. With --upstream PYTHON (default: .venv-upstream/bin/python at
the repository's root, when it exists) the example runs itself again under
that interpreter and prints, after a legend, each case with its result under
both: where the result landed (device, committed or not), or the error
raised, in full. The output is wrapped to 100 columns.
"""

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

_UPSTREAM = (Path(__file__).resolve().parent.parent / ".venv-upstream" /
             "bin" / "python")
WIDTH = 100  # columns of the output

# Paragraphs, and (term, definition) pairs.
LEGEND = [
    "How to read this. Each case runs under upstream JAX and under this "
    "fork, on 8 virtual CPU devices, cpu:0 to cpu:7 (cpu:0 is the default "
    "device). A result is the device its array landed on, and whether it is "
    "committed there:",
    ("committed", "placed on purpose: by jax.device_put, by a device= "
     "argument, or as the result of a computation on committed inputs. It "
     "stays on its device, computations on it run there, and meeting an "
     "array committed to another device is an error."),
    ("uncommitted", "placed by nobody (jnp.arange(3), a NumPy array, a "
     "Python scalar): it is on the default device and follows whatever "
     "computation it is used in."),
    "Eager mode is JAX without jax.jit: each operation runs at once, on the "
    "device of its committed inputs (uncommitted inputs move there), or on "
    "the default device when none is committed. Under jax.jit a result "
    "should land where eager mode puts it. An error is shown in full: its "
    "type, then its message.",
]


def wrap(text, indent=0, first=None):
  """`text` wrapped to WIDTH columns, each of its lines on its own."""
  first = " " * indent if first is None else first
  out = []
  for i, line in enumerate(str(text).splitlines() or [""]):
    out += textwrap.wrap(line, WIDTH, initial_indent=first if i == 0 else
                         " " * indent, subsequent_indent=" " * indent,
                         break_on_hyphens=False) or [""]
  return "\n".join(out)


def legend():
  width = max(len(part[0]) for part in LEGEND if isinstance(part, tuple))
  lines = []
  for part in LEGEND:
    if isinstance(part, tuple):
      term, text = part
      lines.append(wrap(text, indent=4 + width,
                        first=f"  {term.ljust(width)}  "))
    else:
      lines.append(wrap(part))
  return "\n".join(lines)


def describe(result):
  import jax
  if result is None:
    return "returned None"
  if isinstance(result, str):
    return result
  if isinstance(result, jax.Array):
    dev = result.device
    return (f"{dev.platform}:{dev.id} "
            f"{'committed' if result.committed else 'uncommitted'}")
  if hasattr(result, "platform") and hasattr(result, "id"):
    return f"returned {result.platform}:{result.id}"
  return repr(result)


def _run(cases):
  out = []
  for name, thunk in cases():
    try:
      res = describe(thunk())
    except Exception as e:  # noqa: BLE001 -- the error is the result
      res = f"{type(e).__name__}: {str(e).strip()}"
    out.append((name, res))
  return out


def main(cases, script):
  # 8 virtual CPU devices, cpu:0 to cpu:7, made before jax is imported (the
  # upstream run inherits the setting).
  os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                             " --xla_force_host_platform_device_count=8")
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
  print(legend())
  width = max(len(h) for h, _ in cols)
  for i, (name, _) in enumerate(here, 1):
    print()
    print(wrap(name, indent=4, first=f"{i:>2}. "))
    for header, col in cols:
      print(wrap(col[name], indent=6 + width,
                 first=f"    {header.ljust(width)}  "))
