"""The array-API pattern on sharded arrays: upstream against the fork.

  .venv/bin/python tools/sharded_table.py [--out docs/sharded.md]
      [--mesh 1d|2d|both] [--verbose]

Array-API code writes `xp.zeros(n, device=x.device)`; for x sharded over a
mesh, `x.device` is its NamedSharding (issue 15). For each pattern (one row,
a representative shape) this measures the outcome eagerly and under
`jax.jit`, in upstream JAX (.venv-upstream) and in the fork (.venv): the
partition spec of the result (`P('x')`, `P()`, ...; `cpu:0` for an array on
one device; "uncommitted" when it is not committed) or the type of the
error raised. Each environment runs this file with `--worker` in its own
process on 8 virtual CPU devices (XLA_FLAGS) with SCIPY_ARRAY_API=1, and
reports JSON; the table is printed as markdown, and with `--out` written as
a small standalone page.

Meshes: 1-D, `jax.make_mesh((8,), ('x',))` with x = arange(16.) sharded
P('x'); 2-D, `jax.make_mesh((2, 4), ('x', 'y'))` with x = arange(128.)
reshaped (8, 16) and sharded P('x', 'y'). Both have Explicit axes, the
default of jax.make_mesh in 0.12. No context mesh is set: the code runs as
array-API code does.
"""

import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {"XLA_FLAGS": "--xla_force_host_platform_device_count=8",
       "JAX_PLATFORMS": "cpu", "SCIPY_ARRAY_API": "1"}
COMMAND = ".venv/bin/python tools/sharded_table.py --out docs/sharded.md"

# Each row: a Python expression of x (and of xp, the namespace of x, y, a
# small array made with device=x.device, and xb, a batch of two copies of
# x), evaluated eagerly and as the body of a jitted function of x. The
# expression is the row's label.
ROWS = [
    "x.device",
    "xp.zeros((), device=x.device)",
    "xp.zeros(x.shape, device=x.device)",
    "xp.zeros(3, device=x.device)",
    "xp.zeros(16, device=x.device)",
    "xp.zeros((5, 7), device=x.device)",
    "xp.ones(3, device=x.device)",
    "xp.full(16, 2.0, device=x.device)",
    "xp.empty(3, device=x.device)",
    "xp.arange(16, device=x.device)",
    "xp.arange(3, device=x.device)",
    "xp.linspace(0, 1, 16, device=x.device)",
    "xp.linspace(0, 1, 5, device=x.device)",
    "xp.eye(8, device=x.device)",
    "xp.eye(3, 5, device=x.device)",
    "xp.asarray(0.0, device=x.device)",
    "xp.asarray([1.0, 2.0, 3.0], device=x.device)",
    "xp.asarray(x, device=x.device)",
    "xp.astype(x, xp.int32, device=x.device)",
    "xp.zeros_like(x)",
    "xp.zeros_like(x, device=x.device)",
    "xp.full_like(x, 3.0, device=x.device)",
    "xp.empty_like(x)",
    "xp.empty_like(x, device=x.device)",
    "jnp.full((2, 16), jnp.arange(16.0), device=x.device)",
    "x.to_device(x.device)",
    "jax.device_put(x, x.device)",
    "xp.zeros(3, device=array_api_compat.device(x))",
    "x + xp.zeros(x.shape, device=x.device)",
    "xpx.nunique(x % 5)",
    "xpx.pad(x, 2)",
    "xpx.pad(x, 4)",
    "xpx.one_hot(xp.astype(x, xp.int32) % 4, 4)",
    "xpx.cov(xp.reshape(x, (2, -1)))",
    "xpx.at(x)[1].set(0.0)",
    "xpx.at(x)[1].set(xp.asarray(0.0, device=x.device))",
    "xpx.setdiff1d(x, y)",
    "jnp.setdiff1d(x, y, size=x.size, fill_value=-1.0)",
    "xpx.expand_dims(x, axis=0)",
    "scipy.special.logsumexp(x)",
    "scipy.fft.rfftfreq(16, xp=xp, device=x.device)",
    "scipy.fft.fftfreq(16, xp=xp, device=x.device)",
    "jax.vmap(lambda v: xp.zeros(3, device=v.device))(xb)",
    "jax.grad(lambda v: xp.sum(v * xp.ones(v.shape, device=v.device)))(x)",
]

MESHES = {
    "1d": ("1-D mesh of 8 devices, `jax.make_mesh((8,), ('x',))`; "
           "x = `arange(16.)` sharded `P('x')`"),
    "2d": ("2-D mesh of 2 × 4 devices, `jax.make_mesh((2, 4), ('x', 'y'))`; "
           "x = `arange(128.).reshape(8, 16)` sharded `P('x', 'y')`"),
}

COLUMNS = (("upstream", "eager"), ("upstream", "jit"), ("fork", "eager"),
           ("fork", "jit"))


# --------------------------------------------------------------------------
# The worker: runs in one environment, prints JSON.

def _spec_str(spec):
  parts = []
  for p in spec:
    if isinstance(p, tuple):
      parts.append("(" + ", ".join(repr(a) for a in p) + ")")
    else:
      parts.append(repr(p))
  return "P(" + ", ".join(parts) + ")"


def _describe(value):
  import jax  # pylint: disable=g-import-not-at-top
  from jax.sharding import NamedSharding  # pylint: disable=g-import-not-at-top

  def sharding_str(s):
    if isinstance(s, NamedSharding):
      return _spec_str(s.spec)
    devices = sorted(s.device_set, key=lambda d: d.id)
    if len(devices) == 1:
      return f"{devices[0].platform}:{devices[0].id}"
    return type(s).__name__

  if isinstance(value, jax.sharding.Sharding):
    return sharding_str(value)
  if isinstance(value, jax.Array):
    out = sharding_str(value.sharding)
    return out if value.committed else f"{out}, uncommitted"
  return type(value).__name__


def worker(mesh_name):
  import warnings  # pylint: disable=g-import-not-at-top
  warnings.simplefilter("ignore")
  import numpy as np  # pylint: disable=g-import-not-at-top
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  from jax.sharding import NamedSharding, PartitionSpec as P  # pylint: disable=g-import-not-at-top
  import array_api_compat  # pylint: disable=g-import-not-at-top
  import array_api_extra as xpx  # pylint: disable=g-import-not-at-top
  import scipy.fft  # pylint: disable=g-import-not-at-top
  import scipy.special  # pylint: disable=g-import-not-at-top

  if mesh_name == "1d":
    mesh = jax.make_mesh((8,), ("x",))
    x = jax.device_put(np.arange(16.0, dtype=np.float32),
                       NamedSharding(mesh, P("x")))
  else:
    mesh = jax.make_mesh((2, 4), ("x", "y"))
    x = jax.device_put(np.arange(128.0, dtype=np.float32).reshape(8, 16),
                       NamedSharding(mesh, P("x", "y")))

  def body(code):
    ns = dict(jax=jax, jnp=jnp, xpx=xpx, scipy=scipy,
              array_api_compat=array_api_compat)
    src = "def f(x):\n  xp = array_api_compat.array_namespace(x)\n"
    # y and xb only where the row uses them (y reads x.device).
    if re.search(r"\by\b", code):
      src += "  y = xp.asarray([1.0, 3.0, 5.0], device=x.device)\n"
    if re.search(r"\bxb\b", code):
      src += "  xb = xp.stack([x, x])\n"
    src += f"  return {code}\n"
    if code == "x.device":
      # Under jit the read is recorded while tracing; the function returns x.
      src = ("def f(x):\n"
             "  seen.append(x.device)\n"
             "  return x\n")
    exec(src, ns)  # pylint: disable=exec-used
    return ns

  def outcome(code, mode):
    ns = body(code)
    seen = ns["seen"] = []
    f = ns["f"] if mode == "eager" else jax.jit(ns["f"])
    try:
      out = f(x)
      if code == "x.device":
        out = seen[-1]
      return {"cell": _describe(out)}
    except Exception as e:  # pylint: disable=broad-except
      msg = (str(e).strip().splitlines() or [""])[0]
      return {"cell": type(e).__name__, "error": msg[:300]}

  rows = {code: {mode: outcome(code, mode) for mode in ("eager", "jit")}
          for code in ROWS}
  print(json.dumps({"jax": jax.__version__, "rows": rows}))


# --------------------------------------------------------------------------
# The driver.

def run_worker(python, mesh_name):
  env = dict(os.environ, **ENV)
  env["XLA_FLAGS"] = " ".join(
      [os.environ.get("XLA_FLAGS", ""), ENV["XLA_FLAGS"]]).strip()
  p = subprocess.run([python, os.path.abspath(__file__), "--worker",
                      mesh_name], env=env, cwd=ROOT, capture_output=True,
                     text=True, check=False)
  lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
  if p.returncode != 0 or not lines:
    sys.exit(f"{python} --worker {mesh_name} failed (rc {p.returncode}):\n"
             f"{p.stderr[-3000:]}")
  return json.loads(lines[-1])


def _cell(text):
  return text.replace("|", "\\|")


def table(results):
  """results: {"upstream": worker JSON, "fork": worker JSON}."""
  head = ["pattern"] + [f"{m}, {env}" for env, m in COLUMNS]
  lines = ["| " + " | ".join(head) + " |",
           "|" + "---|" * len(head)]
  for code in ROWS:
    cells = [f"`{_cell(code)}`"]
    for env, mode in COLUMNS:
      cells.append(_cell(results[env]["rows"][code][mode]["cell"]))
    lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines)


def errors(results):
  """The first line of each error message, by row and column."""
  out = []
  for code in ROWS:
    for env, mode in COLUMNS:
      r = results[env]["rows"][code][mode]
      if "error" in r:
        out.append(f"- `{code}` ({mode}, {env}): {r['cell']}: {r['error']}")
  return "\n".join(out)


def page(by_mesh):
  some = next(iter(by_mesh.values()))
  L = ["# `device=x.device` on sharded arrays: upstream and the fork", ""]
  L.append(
      "Array-API code creates arrays with `xp.zeros(n, device=x.device)`; "
      "for x sharded over a mesh, `x.device` is its `NamedSharding`. Each "
      "row below is such a pattern (array-api-compat's namespace `xp` of x, "
      "jax.numpy `jnp`, array-api-extra `xpx`, SciPy with "
      "`SCIPY_ARRAY_API=1`; `y` is `xp.asarray([1.0, 3.0, 5.0], "
      "device=x.device)` and `xb` is `xp.stack([x, x])`), run eagerly and as "
      "the body of `jax.jit(lambda x: ...)`, with no context mesh, in "
      f"upstream jax {some['upstream']['jax']} (`.venv-upstream`) and in "
      f"the fork {some['fork']['jax']} (`.venv`), on 8 virtual CPU devices. "
      "A cell is the partition spec of the result (for the `x.device` row, "
      "of the sharding it returns; `cpu:0` for an array on one device; "
      "\"uncommitted\" when it is not committed), or the type of the error "
      "raised. Specs are shown as JAX reports them: eagerly an array keeps "
      "the spec it was given (`P('x')` for a 2-D array), while a jit result "
      "has one entry per dimension (`P('x', None)`), the same layout. Under "
      "the fork, `device=` fits a sharding to the new shape (replicated "
      "along a dimension its mesh axes do not divide). The tables were "
      "produced by")
  L += ["", "```sh", COMMAND, "```", ""]
  for mesh_name, results in by_mesh.items():
    L += [f"## {MESHES[mesh_name]}", "", table(results), ""]
  return "\n".join(L)


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--worker", metavar="MESH", choices=sorted(MESHES),
                 help=argparse.SUPPRESS)
  p.add_argument("--mesh", choices=("1d", "2d", "both"), default="both")
  p.add_argument("--out", help="write the markdown page here")
  p.add_argument("--verbose", action="store_true",
                 help="also print the first line of each error message")
  p.add_argument("--fork-python",
                 default=os.path.join(ROOT, ".venv", "bin", "python"))
  p.add_argument("--upstream-python",
                 default=os.path.join(ROOT, ".venv-upstream", "bin", "python"))
  args = p.parse_args(argv)
  if args.worker:
    worker(args.worker)
    return 0
  meshes = ["1d", "2d"] if args.mesh == "both" else [args.mesh]
  by_mesh = {}
  for mesh_name in meshes:
    by_mesh[mesh_name] = {
        "upstream": run_worker(args.upstream_python, mesh_name),
        "fork": run_worker(args.fork_python, mesh_name)}
    print(f"## {MESHES[mesh_name]}\n")
    print(table(by_mesh[mesh_name]))
    if args.verbose:
      print("\n" + errors(by_mesh[mesh_name]))
    print()
  if args.out:
    with open(os.path.join(ROOT, args.out) if not os.path.isabs(args.out)
              else args.out, "w") as f:
      f.write(page(by_mesh))
    print(f"wrote {args.out}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
