#!/usr/bin/env python3
"""Patch queue: edit the series as git commits, not as diffs.

  python tools/pq.py checkout DIR   # materialize the series as a git tree
  python tools/pq.py export DIR     # write DIR's commits back to the repo

`checkout` makes DIR a git repository holding the `jax` package: pristine
jax from the pinned, verified PyPI wheel (tag `upstream`), then one commit
per patch in patches/, in order (applied with `git am`). The series is the
whole change: a new module (jax/_src/device_tracing.py, device_stages.py)
enters with the patch that first needs it, and later patches add to it.

Edit files and commit. To fold a change into an earlier patch, commit it as
`fixup! <that patch's subject>` (`git commit --fixup <commit>`), then
`git rebase -i --autosquash upstream`. Try the tree without building a
wheel: `PYTHONPATH=DIR .venv/bin/python -m pytest tests`.

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


def _commit_all(tree: Path, message: str) -> None:
  git("add", "-A", ".", cwd=tree)
  git(*_TOOL_IDENTITY, "commit", "--allow-empty", "-q", "-m", message,
      cwd=tree)


def checkout(tree: Path, patch_dir: Path, repo: Path = forklib.REPO) -> int:
  if tree.exists() and any(tree.iterdir()):
    raise BuildError(f"{tree} exists and is not empty")
  pins = forklib.load_pins(repo)
  wheel = forklib.fetch_upstream(pins, repo)
  tree.mkdir(parents=True, exist_ok=True)
  with tempfile.TemporaryDirectory() as tmp:
    forklib.unpack_upstream(wheel, Path(tmp))
    shutil.copytree(Path(tmp) / "jax", tree / "jax")
  git("init", "-q", "-b", "main", cwd=tree)
  _commit_all(tree, f"upstream: jax {pins.jax_version}, pristine\n\n"
              f"From PyPI's {pins.jax_filename}, sha256 {pins.jax_sha256}.")
  git("tag", "upstream", cwd=tree)
  patches = forklib.patch_series(patch_dir)
  for patch in patches:
    r = git(*_TOOL_IDENTITY, "am", "-q", "--keep-cr",
            "--committer-date-is-author-date", str(patch.resolve()),
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


def export(tree: Path, patch_dir: Path) -> int:
  if git("rev-parse", "-q", "--verify", "refs/tags/upstream", cwd=tree,
         check=False).returncode:
    raise BuildError(f"{tree} has no tag 'upstream': not made by "
                     "`pq.py checkout`")
  if _lines(git("status", "--porcelain", cwd=tree)):
    raise BuildError(f"{tree} has uncommitted changes; commit them first")
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
  args = ap.parse_args(argv)
  try:
    if args.cmd == "checkout":
      return checkout(args.tree, args.patches)
    return export(args.tree, args.patches)
  except BuildError as e:
    print(f"pq {args.cmd} failed: {e}", file=sys.stderr)
    return 1


if __name__ == "__main__":
  sys.exit(main())
