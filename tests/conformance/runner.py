"""Runs the conformance cases in the current environment; pickles results.

  python tests/conformance/runner.py --out results.pkl [--subset fast]
      [--only REGEX] [--start N]

Needs 8 CPU devices (XLA_FLAGS=--xla_force_host_platform_device_count=8
JAX_PLATFORMS=cpu). The output file is a stream of pickled records, appended
and flushed one at a time so that a crash loses only the case it crashed in:
`("meta", {...})`, then for each case `("start", index, qualname)` followed
by `("result", index, qualname, mode, how, record)` for each mode and way,
and finally `("done", count)`.

The modes (cpu:3 is COMMITTED_DEVICE, cpu:5 DEFAULT_DEVICE):

- C: every array input committed to cpu:3;
- U: every array input made by jnp.asarray under default_device(cpu:5), and
  the call made inside that context too;
- M: the first array input committed to cpu:3, the others made uncommitted
  under default_device(cpu:5), the call made outside it (>= 2 array inputs);
- D: the creation surface: `device=cpu:3` passed to a function that takes
  `device=`, array inputs uncommitted on the default device;
- J: the creation surface under jit only: an extra, unused argument
  committed to cpu:3, array inputs uncommitted on the default device.

Each mode runs eagerly ("eager") and under jit ("jit"), except J (jit only).
The programs of the AOT family (families/aot.py) also run through the AOT
stages ("aot": trace, lower, compile, call), recording the out shardings each
stage gives. A program's `call_context` is entered around its call, and its
`jit_kwargs` (donation) go to jax.jit; the runner then records which array
inputs the call deleted.
"""

import argparse
import contextlib
import inspect
import os
import pickle
import re
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from conformance import spec  # pylint: disable=g-import-not-at-top


def walk(tree, leaf_fn):
  if isinstance(tree, tuple):
    return tuple(walk(t, leaf_fn) for t in tree)
  if isinstance(tree, list):
    return [walk(t, leaf_fn) for t in tree]
  if isinstance(tree, dict):
    return {k: walk(t, leaf_fn) for k, t in tree.items()}
  return leaf_fn(tree)


def array_refs(args, kwargs):
  """The array inputs' names, in order of appearance."""
  refs = []
  def leaf(t):
    if isinstance(t, str) and t.startswith("@"):
      refs.append(t[1:])
    return t
  walk((args, kwargs), leaf)
  return refs


def substitute(args, kwargs, arrays):
  """args and kwargs with array refs replaced by `arrays`, helpers resolved."""
  it = iter(arrays)
  def leaf(t):
    if isinstance(t, str) and t.startswith("@"):
      return next(it)
    if isinstance(t, str) and t.startswith("$"):
      return spec.helper(t[1:])
    return t
  return walk((args, kwargs), leaf)


def takes_device(fn):
  try:
    return "device" in inspect.signature(fn).parameters
  except (TypeError, ValueError):
    return False


def modes(qualname, args, kwargs):
  """The modes a case runs in, as [(mode, how), ...]."""
  n = len(array_refs(args, kwargs))
  out = []
  if n:
    out += [("C", "eager"), ("C", "jit")]
  out += [("U", "eager"), ("U", "jit")]
  if n >= 2:
    out += [("M", "eager"), ("M", "jit")]
  creation = qualname.startswith("jnp.") and takes_device(
      spec.resolve(qualname))
  if creation:
    out += [("D", "eager"), ("D", "jit")]
  if creation or n == 0:
    out += [("J", "jit")]
  if qualname.startswith(spec.FAMILY + "aot."):
    out += [(m, "aot") for m, how in out if how == "jit"]
  return out


def _make(name, jax, jnp):
  if name == "key":
    return jax.random.key(0)
  return jnp.asarray(spec.value_bank()[name])


def inputs(refs, mode):
  """The array inputs of a case in `mode`: (arrays, call context)."""
  import jax
  import jax.numpy as jnp
  d3 = jax.devices()[spec.COMMITTED_DEVICE]
  d5 = jax.devices()[spec.DEFAULT_DEVICE]
  if mode == "C":
    return [jax.device_put(_make(r, jax, jnp), d3) for r in refs], (
        contextlib.nullcontext())
  if mode == "U":
    with jax.default_device(d5):
      arrays = [_make(r, jax, jnp) for r in refs]
    return arrays, jax.default_device(d5)
  if mode == "M":
    first = jax.device_put(_make(refs[0], jax, jnp), d3)
    with jax.default_device(d5):
      rest = [_make(r, jax, jnp) for r in refs[1:]]
    return [first] + rest, contextlib.nullcontext()
  if mode in ("D", "J"):
    return [_make(r, jax, jnp) for r in refs], contextlib.nullcontext()
  raise ValueError(mode)


def record_output(out):
  """A picklable record of every leaf of `out`."""
  import jax
  import numpy as np
  leaves = []
  for leaf in jax.tree.leaves(out):
    if isinstance(leaf, jax.Array):
      if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
        data = np.asarray(jax.random.key_data(leaf))
      else:
        data = np.asarray(leaf)
      leaves.append(dict(
          kind="array", dtype=str(leaf.dtype), shape=tuple(leaf.shape),
          data_dtype=str(data.dtype), bytes=data.tobytes(),
          devices=sorted(d.id for d in leaf.devices()),
          committed=bool(leaf._committed)))  # pylint: disable=protected-access
    elif isinstance(leaf, np.ndarray) or isinstance(leaf, np.generic):
      leaf = np.asarray(leaf)
      leaves.append(dict(kind="numpy", dtype=str(leaf.dtype),
                         shape=leaf.shape, data_dtype=str(leaf.dtype),
                         bytes=leaf.tobytes()))
    else:
      leaves.append(dict(kind="python", repr=repr(leaf)))
  return leaves


def aot_record(traced, lowered, compiled, out):
  """The out shardings that each AOT stage and the call give, as strings."""
  import jax
  info = lambda tree: [str(getattr(o, "sharding", None))
                       for o in jax.tree.leaves(tree)]
  return dict(traced=info(traced.out_info), lowered=info(lowered.out_info),
              compiled=[str(s) for s in jax.tree.leaves(
                  compiled.output_shardings)],
              call=[str(o.sharding) for o in jax.tree.leaves(out)])


def record_error(e):
  msg = str(e).strip().splitlines()
  return dict(type=type(e).__name__,
              mro=[c.__name__ for c in type(e).__mro__],
              message=msg[0][:300] if msg else "")


def call(qualname, args, kwargs, mode, how):
  """Runs one case in one mode and way; returns its record."""
  import jax
  fn = spec.resolve(qualname)
  refs = array_refs(args, kwargs)
  t0 = time.perf_counter()
  try:
    arrays, ctx = inputs(refs, mode)
    kw_extra = {}
    if mode == "D":
      kw_extra = {"device": jax.devices()[spec.COMMITTED_DEVICE]}
    def f(*arrs):
      a, k = substitute(args, kwargs, arrs)
      return fn(*a, **k, **kw_extra)
    call_ctx = getattr(fn, "call_context", contextlib.nullcontext)
    jit_kwargs = getattr(fn, "jit_kwargs", {})
    aot = None
    with ctx:
      if mode == "J":
        unused = jax.device_put(
            jax.numpy.zeros((), "float32"),
            jax.devices()[spec.COMMITTED_DEVICE])
      with call_ctx():
        if how == "eager":
          out = f(*arrays)
        elif mode == "J":
          out = jax.jit(lambda u, *arrs: f(*arrs))(unused, *arrays)
        elif how == "aot":
          traced = jax.jit(f).trace(*arrays)
          lowered = traced.lower()
          compiled = lowered.compile()
          out = compiled(*arrays)
          aot = aot_record(traced, lowered, compiled, out)
        else:
          out = jax.jit(f, **jit_kwargs)(*arrays)
        out = jax.block_until_ready(out)
    rec = dict(ok=True, leaves=record_output(out))
    if aot is not None:
      rec["aot"] = aot
    if jit_kwargs and how == "jit":
      rec["deleted"] = [a.is_deleted() for a in arrays]
  except Exception as e:  # pylint: disable=broad-except
    rec = dict(ok=False, error=record_error(e))
  rec["seconds"] = time.perf_counter() - t0
  return rec


def selected_cases(subset="all", only=None):
  from conformance import table
  cases = table.CASES
  if subset == "fast":
    fast = set(spec.FAST)
    cases = [c for c in cases if c[0] in fast]
  if only:
    cases = [c for c in cases if re.search(only, c[0])]
  return cases


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--out", required=True)
  p.add_argument("--subset", choices=("all", "fast"), default="all")
  p.add_argument("--only", default=None, help="regex on qualnames")
  p.add_argument("--start", type=int, default=0)
  a = p.parse_args(argv)
  import jax
  if jax.device_count() < 8:
    sys.exit("needs 8 devices: XLA_FLAGS=--xla_force_host_platform_device_count=8")
  warnings.simplefilter("ignore")
  cases = selected_cases(a.subset, a.only)
  with open(a.out, "ab") as f:
    dump = lambda rec: (pickle.dump(rec, f), f.flush())
    if a.start == 0:
      dump(("meta", dict(jax_version=jax.__version__, jax_file=jax.__file__,
                         cases=len(cases), python=sys.version)))
    for i, (q, args, kwargs) in enumerate(cases):
      if i < a.start:
        continue
      dump(("start", i, q))
      for mode, how in modes(q, args, kwargs):
        dump(("result", i, q, mode, how, call(q, args, kwargs, mode, how)))
    dump(("done", len(cases)))


def read(path):
  """Reads a runner output file: a list of its records."""
  out = []
  with open(path, "rb") as f:
    while True:
      try:
        out.append(pickle.load(f))
      except EOFError:
        break
      except pickle.UnpicklingError:
        break
  return out


if __name__ == "__main__":
  main()
