"""Picks every function's arguments by probing UPSTREAM jax; writes table.json.

  XLA_FLAGS=--xla_force_host_platform_device_count=8 JAX_PLATFORMS=cpu \\
      .venv-upstream/bin/python tests/conformance/probe.py

For each public function (spec.public_functions) not in spec.SKIP, the
hand-written candidates (spec.MANUAL), then the generic recipes
(spec.GENERIC, or spec.RANDOM for jax.random), are tried in order with
uncommitted inputs; the first that upstream runs both eagerly and under jit,
returning at least one array, is the function's case (else the first that
runs eagerly). Functions that no candidate reaches are listed in
NOT_COVERED with upstream's last error. The output, table.json (read by
table.py, which describes its format), is committed: the fork is checked
against this fixed table and never picks its own arguments.
"""

import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from conformance import runner  # pylint: disable=g-import-not-at-top
from conformance import spec  # pylint: disable=g-import-not-at-top
from conformance import table  # pylint: disable=g-import-not-at-top


def _try(fn, args, kwargs, jit):
  import jax
  import jax.numpy as jnp
  refs = runner.array_refs(args, kwargs)
  arrays = [jax.random.key(0) if r == "key" else
            jnp.asarray(spec.value_bank()[r]) for r in refs]
  def f(*arrs):
    a, k = runner.substitute(args, kwargs, arrs)
    return fn(*a, **k)
  out = (jax.jit(f) if jit else f)(*arrays)
  out = jax.block_until_ready(out)
  if not any(isinstance(l, jax.Array) for l in jax.tree.leaves(out)):
    raise TypeError("returns no arrays")


def candidates(qualname):
  out = list(spec.MANUAL.get(qualname, []))
  recipes = spec.RANDOM if qualname.startswith("random.") else spec.GENERIC
  out += [(r, {}) for r in recipes]
  return out


def probe(qualname):
  """(args, kwargs, jit_ok) of the first candidate upstream accepts, or an
  error string."""
  fn = spec.resolve(qualname)
  eager_only, last = None, "no candidate"
  for args, kwargs in candidates(qualname):
    try:
      _try(fn, args, kwargs, jit=False)
    except Exception as e:  # pylint: disable=broad-except
      last = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:120]}" \
          if str(e).strip() else type(e).__name__
      continue
    try:
      _try(fn, args, kwargs, jit=True)
    except Exception:  # pylint: disable=broad-except
      if eager_only is None:
        eager_only = (args, kwargs, False)
      continue
    return (args, kwargs, True)
  return eager_only if eager_only is not None else last


def main(argv=None):
  import argparse
  import re
  import jax
  p = argparse.ArgumentParser()
  p.add_argument("--only", default=None,
                 help="re-probe only the qualnames this regex finds; keep "
                 "the table's other entries")
  a = p.parse_args(argv)
  warnings.simplefilter("ignore")
  assert "devtrace" not in jax.__version__, "probe with UPSTREAM jax"
  cases, not_covered, skipped = [], {}, {}
  if a.only:
    old = {c[0]: c for c in table.CASES}
    old_nc = dict(table.NOT_COVERED)
  t0 = time.time()
  for qualname, _ in spec.public_functions():
    if qualname in spec.SKIP:
      skipped[qualname] = spec.SKIP[qualname]
      continue
    if a.only and not re.search(a.only, qualname):
      if qualname in old:
        cases.append(old[qualname])
      elif qualname in old_nc:
        not_covered[qualname] = old_nc[qualname]
      continue
    r = probe(qualname)
    if isinstance(r, str):
      not_covered[qualname] = r
    else:
      cases.append((qualname, r[0], r[1]))
    print(f"{time.time() - t0:7.1f}s {qualname}: "
          f"{r if isinstance(r, str) else r[:2]}", flush=True)
  table.write(jax.__version__, cases, not_covered, skipped)
  print(f"{len(cases)} cases, {len(not_covered)} not covered, "
        f"{len(skipped)} skipped -> {table.PATH}")


if __name__ == "__main__":
  main()
