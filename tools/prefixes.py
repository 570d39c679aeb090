#!/usr/bin/env python3
"""Checks that every prefix of the series imports and runs a jit, flags on.

  .venv/bin/python tools/prefixes.py [--tests]

Bisectable: with the series applied to the release's files one patch at a
time (tools/branch.py's repository, every non-fork patch a commit), each
commit must import, and run a small program with every device-tracing flag
that commit defines turned on, and with the flags at their defaults: jits
of committed and uncommitted arguments, a creation function with `device=`
and a `device_put` under jit, grad and vmap.

With --tests, each commit also runs the test files it adds or changes (its
pull request's tests), with every flag on: a test enters with the patch its
`Tests:` line names, or with the later one it needs to pass.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import branch  # noqa: E402
import forklib  # noqa: E402
from forklib import git  # noqa: E402

_SMOKE = """
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import jax, jax.numpy as jnp
d = jax.devices()
x3 = jax.device_put(jnp.arange(3.0), d[3])
u = jnp.arange(3.0)
assert (jax.jit(lambda x, y: x * 2 + y)(x3, u) == 2 * u + u).all()
assert jax.jit(lambda x: jnp.zeros(3, device=d[3]) + x)(x3).device == d[3]
assert jax.jit(jax.grad(lambda x: (x * x).sum()))(x3).shape == (3,)
assert jax.vmap(lambda x: x + 1)(x3).shape == (3,)
assert (jax.jit(lambda x: jnp.sum(x) + jnp.zeros(3))(x3) == 3.0).all()
assert jax.jit(lambda x: jax.device_put(x, d[3]) + 1)(u).shape == (3,)
"""


def _own_tests(tree: Path, commit: str, skip: list[str]) -> list[str]:
  """The series' test files that `commit` adds or changes."""
  names = git("diff-tree", "--no-commit-id", "--name-only", "-r", commit,
              cwd=tree).stdout.split()
  return [n for n in names if n.startswith("tests/") and
          n.endswith("_test.py") and n not in skip]


def main(argv=None) -> int:
  argv = sys.argv[1:] if argv is None else argv
  with_tests = "--tests" in argv
  python = forklib.REPO / ".venv" / "bin" / "python"
  failures = []
  with tempfile.TemporaryDirectory(prefix="devtrace-prefixes-") as tmp:
    tree, series = branch.make_branch(Path(tmp))
    commits = git("rev-list", "--reverse", f"HEAD~{len(series)}..HEAD",
                  cwd=tree).stdout.split()
    for patch, commit in zip(series, commits):
      git("checkout", "-q", commit, cwd=tree)
      for flags in ("defaults", "on"):
        env = dict(os.environ, PYTHONPATH=str(tree),
                   JAX_TRACEBACK_FILTERING="off")
        if flags == "on":
          env.update(JAX_DEVICE_TRACING="1",
                     JAX_DEVICE_TRACING_CROSS_DEVICE="1")
        r = subprocess.run([str(python), "-c", _SMOKE], env=env,
                           cwd=tmp, capture_output=True, text=True)
        if r.returncode:
          last = (r.stderr.strip().splitlines() or ["?"])[-1]
          failures.append(f"{patch.name} (flags {flags}): {last}")
      own = _own_tests(tree, commit, forklib.upstream_test_files(series))
      if with_tests and own:
        env = dict(os.environ, PYTHONPATH=str(tree), JAX_DEVICE_TRACING="1",
                   JAX_DEVICE_TRACING_CROSS_DEVICE="1", JAX_PLATFORMS="cpu")
        r = subprocess.run([str(python), "-m", "pytest", "-q", "-p",
                            "no:cacheprovider", *(str(tree / t) for t in own)],
                           env=env, cwd=forklib.REPO, capture_output=True,
                           text=True)
        if r.returncode:
          failed = [l for l in r.stdout.splitlines()
                    if l.startswith(("FAILED", "ERROR"))]
          failures.append(f"{patch.name} (its tests): " +
                          "; ".join(failed[:5] or r.stdout.splitlines()[-1:]))
      print(f"prefixes: {patch.name[:4]} checked", flush=True)
  for f in failures:
    print(f, file=sys.stderr)
  print(f"prefixes: {len(commits)} prefixes, {len(failures)} failures")
  return 1 if failures else 0


if __name__ == "__main__":
  sys.exit(main())
