#!/usr/bin/env python3
"""Patch queue: edit the series as git commits, not as diffs.

  python tools/pq.py checkout DIR --jax-repo JAX  # the series as a git tree
  python tools/pq.py export DIR     # write DIR's commits back to the repo

`checkout` makes DIR a git repository holding the `jax` package: pristine
jax from the pinned, verified PyPI wheel, and the files of upstream's tests/
that the series changes, from `tests_commit` (upstream.toml) of JAX, a
jax-ml/jax clone or bare git directory (tag `upstream`); then one commit per
patch in patches/, in order (applied with `git am`). The series is the whole
change: a new module (jax/_src/device_tracing.py and the others of
docs/design.md, "Where it lives") or test file (tests/*_test.py) enters with
the patch that first needs it, and later patches add to it. Without --jax-repo the hunks of upstream's test files are
left out (`--without-upstream-tests`), and such a tree cannot be exported.

Edit files and commit. To fold a change into an earlier patch, commit it as
`fixup! <that patch's subject>` (`git commit --fixup <commit>`), then
`git rebase -i --autosquash upstream`. Try the tree without building a
wheel: `PYTHONPATH=DIR .venv/bin/python -m pytest DIR/tests tests`.

`export` turns every commit after `upstream` into one patch of its changes
(git format-patch style: subject, message, diffstat, diff). Checkout
followed by export with no edits reproduces the series byte for byte.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import forklib  # noqa: E402
from forklib import BuildError, git  # noqa: E402

# Identity of the tool's own commit (the upstream base).  Patch commits keep
# the author recorded in each patch.
_TOOL_IDENTITY = ("-c", "user.name=devtrace pq", "-c",
                  "user.email=devtrace-pq@localhost")

# Options that make format-patch output independent of the machine, the git
# configuration and the size of the repository.
_FORMAT_PATCH_OPTS = ("--zero-commit", "--no-signature", "--no-numbered",
                      "--full-index", "--stat=80", "--no-renames",
                      "--encode-email-headers")


# Marks a tree checked out without upstream's test files (in its base
# commit's message): exporting it would drop their hunks.
_NO_TESTS = "checked out with --without-upstream-tests."


def _commit_all(tree: Path, message: str) -> None:
  git("add", "-A", ".", cwd=tree)
  git(*_TOOL_IDENTITY, "commit", "--allow-empty", "-q", "-m", message,
      cwd=tree)


def checkout(tree: Path, patch_dir: Path, repo: Path = forklib.REPO,
             jax_repo: Path | None = None,
             without_upstream_tests: bool = False) -> int:
  if tree.exists() and any(tree.iterdir()):
    raise BuildError(f"{tree} exists and is not empty")
  pins = forklib.load_pins(repo)
  patches = forklib.patch_series(patch_dir)
  tests = forklib.upstream_test_files(patches)
  if tests and jax_repo is None and not without_upstream_tests:
    raise BuildError(
        f"the series changes upstream's {', '.join(tests)}: pass --jax-repo "
        "(a jax-ml/jax clone) to check them out, or --without-upstream-tests")
  wheel = forklib.fetch_upstream(pins, repo)
  tree.mkdir(parents=True, exist_ok=True)
  with tempfile.TemporaryDirectory() as tmp:
    forklib.unpack_upstream(wheel, Path(tmp))
    shutil.copytree(Path(tmp) / "jax", tree / "jax")
  message = (f"upstream: jax {pins.jax_version}, pristine\n\n"
             f"From PyPI's {pins.jax_filename}, sha256 {pins.jax_sha256}.")
  exclude = forklib.write_upstream_tests(tree, tests, jax_repo,
                                         pins.tests_commit)
  if tests and not exclude:
    message += (f"\n{', '.join(tests)} from jax-ml/jax "
                f"{pins.tests_commit[:12]}.")
  elif tests:
    message += f"\nWithout {', '.join(tests)}: {_NO_TESTS}"
  git("init", "-q", "-b", "main", cwd=tree)
  _commit_all(tree, message)
  git("tag", "upstream", cwd=tree)
  for patch in patches:
    r = git(*_TOOL_IDENTITY, "am", "-q", "--keep-cr",
            "--committer-date-is-author-date", *exclude, str(patch.resolve()),
            cwd=tree, check=False)
    if r.returncode != 0:
      git("am", "--abort", cwd=tree, check=False)
      raise BuildError(f"patch {patch.name} does not apply with git am:\n"
                       f"{r.stdout}{r.stderr}")
  print(f"{tree}: upstream + {len(patches)} patches "
        f"({git('rev-parse', '--short', 'HEAD', cwd=tree).stdout.strip()})")
  return 0


def _lines(r) -> list[str]:
  return [l for l in r.stdout.splitlines() if l]


def export(tree: Path, patch_dir: Path,
           without_upstream_tests: bool = False) -> int:
  """Writes the tree's commits as patches.

  A tree checked out --without-upstream-tests is refused, as its patches
  would lose their hunks of upstream's test files, unless
  `without_upstream_tests` (for the build's tests; not on the command line).
  """
  if git("rev-parse", "-q", "--verify", "refs/tags/upstream", cwd=tree,
         check=False).returncode:
    raise BuildError(f"{tree} has no tag 'upstream': not made by "
                     "`pq.py checkout`")
  if _lines(git("status", "--porcelain", cwd=tree)):
    raise BuildError(f"{tree} has uncommitted changes; commit them first")
  if not without_upstream_tests and _NO_TESTS in git(
      "log", "-1", "--format=%B", "upstream", cwd=tree).stdout:
    raise BuildError(f"{tree} was {_NO_TESTS[:-1]}: exporting it would drop "
                     "their hunks; check out with --jax-repo")
  with tempfile.TemporaryDirectory() as tmp:
    git("format-patch", *_FORMAT_PATCH_OPTS, "-o", tmp, "upstream..HEAD",
        cwd=tree)
    new = sorted(Path(tmp).glob("*.patch"))
    patch_dir.mkdir(parents=True, exist_ok=True)
    for old in forklib.patch_series(patch_dir):
      old.unlink()
    for p in new:
      shutil.copyfile(p, patch_dir / p.name)
  print(f"exported {len(new)} patches to {patch_dir}")
  return 0


def main(argv=None) -> int:
  ap = argparse.ArgumentParser(
      description="Edit the fork's patch series as git commits.")
  sub = ap.add_subparsers(dest="cmd", required=True)
  for name in ("checkout", "export"):
    p = sub.add_parser(name)
    p.add_argument("tree", type=Path)
    p.add_argument("--patches", type=Path, default=forklib.REPO / "patches")
    if name == "checkout":
      p.add_argument("--jax-repo", type=Path,
                     help="a jax-ml/jax clone: upstream's test files")
      p.add_argument("--without-upstream-tests", action="store_true",
                     help="leave out the hunks of upstream's test files")
  args = ap.parse_args(argv)
  try:
    if args.cmd == "checkout":
      return checkout(args.tree, args.patches, jax_repo=args.jax_repo,
                      without_upstream_tests=args.without_upstream_tests)
    return export(args.tree, args.patches)
  except BuildError as e:
    print(f"pq {args.cmd} failed: {e}", file=sys.stderr)
    return 1


if __name__ == "__main__":
  sys.exit(main())
