"""Tests of the fork's build: hash check, patch series, round trip, wheel."""

import ast
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from absl.testing import absltest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import forklib  # noqa: E402
import pq  # noqa: E402

PINS = forklib.load_pins(REPO)
UPSTREAM_WHEEL = REPO / forklib.CACHE_DIR / PINS.jax_filename
WHEELHOUSE = REPO / "build" / "wheelhouse"


def _build(*args):
  if "--tests-out" not in args:  # never build/series-tests, which tests run
    args = (*args, "--tests-out", Path(tempfile.mkdtemp()) / "tests")
  return subprocess.run([sys.executable, str(REPO / "tools" / "build.py"),
                         "--quiet", *map(str, args)],
                        capture_output=True, text=True, cwd=REPO)


def _clean_env():
  # pytest-xdist workers run with a PYTHONPATH that would show a fresh venv
  # this repository's environment.
  return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _sha256(path):
  return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _without_files(patch_text, paths):
  """A patch's text without its diffs and diffstat lines of `paths`.

  The other diffstat lines lose their alignment, which depends on theirs.
  """
  out, skip = [], False
  for line in patch_text.splitlines(keepends=True):
    if line.startswith("diff --git "):
      skip = any(line.startswith(f"diff --git a/{p} ") for p in paths)
    if skip or re.match(r" \d+ files? changed", line) or any(
        line.startswith(f" {p} ") for p in paths):
      continue
    out.append(re.sub(r"^ (\S+) +\| +", r" \1 | ", line))
  return "".join(out)


def _methods(classes, name):
  """The methods of a test class, with those of its bases in the file."""
  cls = classes[name]
  methods = {f.name for f in cls.body if isinstance(f, ast.FunctionDef)}
  for base in cls.bases:
    if isinstance(base, ast.Name) and base.id in classes:
      methods |= _methods(classes, base.id)
  return methods


# Modules whose names a patch message uses as `module.name`.
_MODULES = ("core", "device_tracing", "device_stages", "pjit", "pxla", "pe",
            "partial_eval", "dispatch", "api", "stages", "config", "array",
            "lax", "jnp", "mlir", "util", "batching", "ad")
_CODE_NAME = re.compile(
    r"\b(?:(?:%s)\.[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?"
    r"|jax_[a-z_]+)\b" % "|".join(_MODULES))


def _named_code(message):
  """(name, gone) for the code a patch message names.

  `gone` for what it says a module loses ("device_tracing loses a, b and
  c"): the names after "loses" up to the end of the sentence.
  """
  text = " ".join(message.split())
  out = []
  for sentence in re.split(r"(?<=[.;:])\s", text):
    _, sep, lost = sentence.partition(" loses ")
    lost = lost.split(" gains ")[0].split(" and gains ")[0]
    for m in _CODE_NAME.finditer(sentence):
      out.append((m.group(0), False))
    if sep:
      for word in re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", lost):
        if word not in ("and", "or", "the", "its", "a", "an") and (
            "_" in word or word[0].isupper()):
          out.append((word, True))
  return out


def _files_naming(wheel, names):
  """The .py files of a wheel that name any of `names`."""
  return {n for n in wheel.namelist() if n.endswith(".py") and
          any(name in wheel.read(n).decode() for name in names)}


class BuildTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    if not UPSTREAM_WHEEL.exists():
      self.skipTest("run ./setup.sh first: no cached upstream wheel")
    self.tmp = Path(tempfile.mkdtemp(prefix="devtrace-build-test-"))
    self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

  def test_pins_agree(self):
    req = (REPO / "tools" / "requirements.txt").read_text().splitlines()
    self.assertIn(f"jaxlib=={PINS.jaxlib_version}", req)
    self.assertEqual(PINS.jax_filename,
                     f"jax-{PINS.jax_version}-py3-none-any.whl")

  def test_the_release_commit_is_the_wheel_s(self):
    with zipfile.ZipFile(UPSTREAM_WHEEL) as z:
      version = z.read("jax/version.py").decode()
    self.assertIn(f"_git_hash: str = {PINS.release_commit!r}", version)
    self.assertEqual(PINS.release_tag, f"jax-v{PINS.jax_version}")

  def test_the_series_applies_with_git_am_onto_the_release(self):
    # What tools/branch.py does before its tests: a maintainer's `git am`.
    sys.path.insert(0, str(REPO / "tools"))
    import branch  # pylint: disable=g-import-not-at-top
    tree, series = branch.make_branch(self.tmp / "branch")
    self.assertNotIn("fork", [forklib.patch_step(p) for p in series])
    log = forklib.git("log", "--format=%s", cwd=tree).stdout.splitlines()
    self.assertEqual(len(log), len(series) + 1)
    tag = forklib.git("describe", "--tags", "--abbrev=0", cwd=tree).stdout
    self.assertEqual(tag.strip(), PINS.release_tag)
    config = (tree / "jax" / "_src" / "config.py").read_text()
    # Without the fork-only patches both flags are off, as proposed.
    self.assertIn("name='jax_device_tracing',\n    default=False,", config)
    self.assertIn("name='jax_device_tracing_cross_device',\n    default=False,",
                  config)

  def test_each_message_names_what_its_tree_has(self):
    # A patch's message may name the code it changes (module.function,
    # jax_* flags); each name must exist in the tree after that patch, but
    # for what the message says a module loses, which must not.
    sys.path.insert(0, str(REPO / "tools"))
    import branch  # pylint: disable=g-import-not-at-top
    tree, series = branch.make_branch(self.tmp / "branch")
    commits = forklib.git("rev-list", "--reverse", "HEAD~%d..HEAD"
                          % len(series), cwd=tree).stdout.split()
    for patch, commit in zip(series, commits):
      message = patch.read_text().split("\n---\n", 1)[0]
      message = message.split("\n\n", 1)[1]  # the body, after the subject
      for name, gone in _named_code(message):
        found = forklib.git("grep", "-qw", name.split(".")[-1], commit, "--",
                            "jax", cwd=tree, check=False).returncode == 0
        self.assertEqual(found, not gone, f"{patch.name} names {name}")

  def test_the_design_s_patch_table_is_the_series(self):
    # docs/design.md lists every patch with its step ("Where it lives").
    rows = re.findall(r"^\| (\d{4}) \| (\w+) \|",
                      (REPO / "docs" / "design.md").read_text(), re.M)
    series = forklib.patch_series(REPO / "patches")
    self.assertEqual(rows, [(p.name[:4], forklib.patch_step(p))
                            for p in series])

  def test_forward_port_onto_the_release_itself_is_clean(self):
    # tools/forward_port.py on a jax-ml/jax stand-in whose commit holds the
    # release's files: every patch applies as it is, and range-diff finds
    # every patch the same.
    sys.path.insert(0, str(REPO / "tools"))
    import branch  # pylint: disable=g-import-not-at-top
    import forward_port  # pylint: disable=g-import-not-at-top
    tree, series = branch.make_branch(self.tmp / "release")
    forklib.git("reset", "-q", "--hard", PINS.release_tag, cwd=tree)
    rows, fp_tree, base, desc = forward_port.forward_port(
        tree, PINS.release_tag, self.tmp / "fp")
    self.assertEqual([r[0] for r in rows], [p.name for p in series])
    self.assertEqual({r[1] for r in rows}, {"clean"})
    self.assertIn("0 in conflict", forward_port.table(rows, desc))
    diff = forward_port.range_diff(fp_tree, base)
    self.assertEqual(len(diff.splitlines()), len(series))
    self.assertTrue(all(" = " in l for l in diff.splitlines()))

  def test_forward_port_onto_a_release_wheel(self):
    # --release with the pinned release's own wheel (no download, no
    # jax-ml/jax clone: upstream's test files are left out): every patch
    # applies as it is, the distance is nil, and the pins it prints are
    # upstream.toml's.
    sys.path.insert(0, str(REPO / "tools"))
    import forward_port  # pylint: disable=g-import-not-at-top
    rows, tree, base, desc = forward_port.forward_port(
        None, None, self.tmp / "fp", release=PINS.jax_version,
        wheel=UPSTREAM_WHEEL, sha256=PINS.jax_sha256)
    self.assertEqual({r[1] for r in rows}, {"clean"})
    self.assertIn(f"jax {PINS.jax_version} from PyPI", desc)
    self.assertIn(PINS.release_commit[:12], desc)
    self.assertIn("jax/: no change", forward_port.distance(tree, base))
    pins = forward_port.pins_for(PINS.jax_version, UPSTREAM_WHEEL,
                                 PINS.jax_sha256)
    for value in (PINS.jax_filename, PINS.jax_sha256, PINS.release_commit,
                  PINS.release_tag):
      self.assertIn(f'"{value}"', pins)
    with self.assertRaisesRegex(forklib.BuildError, "sha256 mismatch"):
      forward_port.forward_port(None, None, self.tmp / "fp2",
                                release=PINS.jax_version, wheel=UPSTREAM_WHEEL,
                                sha256="0" * 64)
    with self.assertRaisesRegex(forklib.BuildError, "not a wheel of jax 9.9"):
      forward_port.forward_port(None, None, self.tmp / "fp3", release="9.9",
                                wheel=UPSTREAM_WHEEL)

  def test_each_fix_applies_alone_on_upstream(self):
    # An independent fix is a pull request of its own: it applies to the
    # release with nothing else of the series.
    series = forklib.patch_series(REPO / "patches")
    fixes = [p for p in series if forklib.patch_step(p) == "fix"]
    self.assertNotEmpty(fixes)
    for patch in fixes:
      stage = self.tmp / patch.name[:4]
      forklib.unpack_upstream(UPSTREAM_WHEEL, stage)
      forklib.apply_series(stage, [patch],
                           tuple(forklib.upstream_test_files([patch])))

  def test_hash_check_refuses_a_tampered_upstream_file(self):
    tampered = self.tmp / PINS.jax_filename
    data = bytearray(UPSTREAM_WHEEL.read_bytes())
    data[len(data) // 2] ^= 0xFF
    tampered.write_bytes(bytes(data))
    out = self.tmp / "dist"
    r = _build("--upstream-wheel", tampered, "--out", out)
    self.assertEqual(r.returncode, 1, r.stderr)
    self.assertIn("sha256 mismatch", r.stderr)
    self.assertIn(PINS.jax_sha256, r.stderr)
    self.assertIn(_sha256(tampered), r.stderr)
    self.assertFalse(out.exists() and any(out.iterdir()))

  def test_a_patch_that_does_not_apply_stops_the_build_with_its_name(self):
    patches = self.tmp / "patches"
    shutil.copytree(REPO / "patches", patches)
    broken = patches / "9999-broken-context.patch"
    broken.write_text(
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        "From: Test <test@example.com>\n"
        "Subject: [PATCH] version: a hunk whose context is not upstream's\n"
        "\nSeries-Step: 2\n---\n"
        "diff --git a/jax/version.py b/jax/version.py\n"
        "--- a/jax/version.py\n"
        "+++ b/jax/version.py\n"
        "@@ -20,3 +20,4 @@ import os\n"
        " this line is not in upstream's version.py\n"
        "+_added = 1\n"
        " neither is this one\n"
        " nor this one\n")
    out = self.tmp / "dist"
    r = _build("--patches", patches, "--out", out)
    self.assertEqual(r.returncode, 1, r.stderr)
    self.assertIn("patch 9999-broken-context.patch does not apply", r.stderr)
    self.assertIn("upstream file: jax/version.py", r.stderr)
    self.assertIn("failing hunk (line 20)", r.stderr)
    self.assertIn("+_added = 1", r.stderr)
    self.assertFalse(out.exists() and any(out.iterdir()))

  def test_a_cut_after_step_1_leaves_out_step_2(self):
    out = self.tmp / "cut"
    r = _build("--step", "1", "--out", out)
    self.assertEqual(r.returncode, 0, r.stderr)
    (wheel,) = out.glob("*.whl")
    version = forklib.fork_version(PINS, REPO) + ".step1"
    self.assertEqual(wheel.name, f"jax-{version}-py3-none-any.whl")
    series = forklib.patch_series(REPO / "patches")
    cut = forklib.series_cut(series, "1")
    self.assertEqual(cut, series[:len(cut)])
    self.assertNotIn("2", [forklib.patch_step(p) for p in cut])
    self.assertTrue(all(forklib.patch_step(p) in ("2", "fork")
                        for p in series[len(cut):]))
    self.assertIn("2", [forklib.patch_step(p) for p in series[len(cut):]])
    with zipfile.ZipFile(wheel) as z:
      config = z.read("jax/_src/config.py").decode()
      # Device tracing is on in the cut too: the fork's default, from the
      # fork-only patch that follows step 1.
      self.assertIn("name='jax_device_tracing',\n    default=True,", config)
      self.assertNotIn("jax_device_tracing_cross_device", config)
      self.assertNotIn("jax/_src/device_stages.py", z.namelist())
      # The modules as step 1's patches make them: step 2's code is not in
      # them.
      tracing = z.read("jax/_src/device_tracing.py").decode()
      errors = z.read("jax/_src/device_errors.py").decode()
      table = z.read("jax/_src/device_table.py").decode()
      self.assertIn("def fit_sharding(", tracing)
      self.assertIn("def params_jaxprs(", table)
      self.assertIn("def stale_error(", errors)
      for name in ("def join_operands(", "transfer_primitives",
                   "config.device_tracing_cross_device"):
        self.assertNotIn(name, tracing)
      self.assertNotIn("config.device_tracing_cross_device", errors)

  def test_the_independent_fixes_stand_on_upstream_alone(self):
    # The cut after `fix` is upstream jax, the fork-only patches and the
    # independent fixes: no module of the fork, nothing of step 1.
    out = self.tmp / "cut-fix"
    r = _build("--step", "fix", "--out", out)
    self.assertEqual(r.returncode, 0, r.stderr)
    series = forklib.patch_series(REPO / "patches")
    cut = forklib.series_cut(series, "fix")
    fixes = [p for p in cut if forklib.patch_step(p) == "fix"]
    self.assertLen(fixes, 2)
    for p in fixes:
      diff = p.read_text().split("\ndiff --git ", 1)[1]
      self.assertNotIn("device_tracing", diff, p.name)
      # Its tests are in the files it adds or changes.
      for t in forklib.patch_tests(p):
        self.assertIn(f" b/{t.split('::')[0]}\n", diff, p.name)
    self.assertEqual(forklib.patch_step(series[len(cut)]), "1")
    (wheel,) = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
      names = z.namelist()
      self.assertNotIn("jax/_src/device_tracing.py", names)
      self.assertNotIn("jax_device_tracing",
                       z.read("jax/_src/config.py").decode())

  def test_every_patch_names_tests_that_exist(self):
    # Each patch carries its tests by name (`Tests:` lines in its message):
    # test files, classes and methods that a rename would leave dangling,
    # in the series' test files (tests/ of the patched tree) or, for a
    # fork-only patch, the project's. A test in one of upstream's test files
    # is in a hunk of the patch (its file is not here: the release's tests
    # are not in its wheel).
    series = forklib.patch_series(REPO / "patches")
    stage = self.tmp / "stage"
    forklib.stage_fork(stage, UPSTREAM_WHEEL, REPO / "patches")
    upstream_tests = forklib.upstream_test_files(series)
    for patch in series:
      named = forklib.patch_tests(patch)
      self.assertNotEmpty(named, f"{patch.name} names no test")
      for node in named:
        path, *names = node.split("::")
        if path in upstream_tests:
          self.assertIn(f" b/{path}\n", patch.read_text(), node)
          continue
        where = REPO if forklib.patch_step(patch) == "fork" else stage
        if not (where / path).exists():
          where = stage if where == REPO else REPO
        tree = ast.parse((where / path).read_text())
        classes = {c.name: c for c in tree.body
                   if isinstance(c, ast.ClassDef)}
        self.assertIn(names[0], classes, f"{patch.name}: {node}")
        if len(names) > 1:
          self.assertIn(names[1], _methods(classes, names[0]),
                        f"{patch.name}: {node}")

  def test_a_series_out_of_step_order_is_refused(self):
    patches = self.tmp / "patches"
    shutil.copytree(REPO / "patches", patches)
    last = [p for p in forklib.patch_series(patches)
            if forklib.patch_step(p) == "2"][-1]
    late = patches / "9999-late.patch"
    late.write_text(last.read_text().replace("Series-Step: 2",
                                             "Series-Step: 1"))
    r = _build("--patches", patches, "--out", self.tmp / "dist")
    self.assertEqual(r.returncode, 1, r.stderr)
    self.assertIn("9999-late.patch (step 1) comes after a patch of a later "
                  "step", r.stderr)

  def test_checkout_then_export_reproduces_the_series_byte_for_byte(self):
    # With a jax-ml/jax clone (DEVTRACE_JAX_REPO), byte for byte; without
    # one (CI), but for the hunks of upstream's test files, which need it.
    jax_repo = os.environ.get("DEVTRACE_JAX_REPO")
    series = forklib.patch_series(REPO / "patches")
    tests = [] if jax_repo else forklib.upstream_test_files(series)
    tree = self.tmp / "tree"
    with self.assertRaisesRegex(forklib.BuildError, "pass --jax-repo"):
      pq.checkout(tree, REPO / "patches", REPO)
    self.assertEqual(pq.checkout(
        tree, REPO / "patches", REPO,
        jax_repo=Path(jax_repo) if jax_repo else None,
        without_upstream_tests=not jax_repo), 0)
    log = forklib.git("log", "--format=%s", cwd=tree).stdout.splitlines()
    self.assertEqual(len(log), len(series) + 1)
    self.assertTrue(log[-1].startswith("upstream: jax"))
    out = self.tmp / "out"
    if tests:
      with self.assertRaisesRegex(forklib.BuildError, "would drop"):
        pq.export(tree, out / "patches")
    self.assertEqual(pq.export(tree, out / "patches",
                               without_upstream_tests=bool(tests)), 0)
    ours = sorted(p.name for p in series)
    theirs = sorted(p.name for p in forklib.patch_series(out / "patches"))
    self.assertEqual(ours, theirs)
    for name in ours:
      self.assertEqual(
          _without_files((REPO / "patches" / name).read_text(), tests),
          _without_files((out / "patches" / name).read_text(), tests), name)

  def test_the_series_adds_every_new_module(self):
    # No file of the jax package is kept outside the series: a new module
    # enters with the patch that first needs it.
    self.assertFalse((REPO / "jax").exists())
    added = {}
    for patch in forklib.patch_series(REPO / "patches"):
      for line in patch.read_text().splitlines():
        if line.startswith("new file mode"):
          added.setdefault(prev, patch.name)
        prev = line
    self.assertEqual(
        sorted(a.split(" b/")[-1] for a in added if " b/jax/" in a),
        ["jax/_src/device_errors.py", "jax/_src/device_meshes.py",
         "jax/_src/device_stages.py", "jax/_src/device_table.py",
         "jax/_src/device_tracing.py",
         "jax/_src/internal_test_util/device_tracing_test_util.py",
         "jax/_src/interpreters/shared_lowering.py"])

  def test_export_keeps_a_patch_s_module_changes_in_the_patch(self):
    # A patch may add a module or change one a patch added.
    tree = self.tmp / "tree"
    pq.checkout(tree, REPO / "patches", REPO, without_upstream_tests=True)
    (tree / "jax" / "_src" / "pq_test_module.py").write_text("X = 1\n")
    tracing = tree / "jax" / "_src" / "device_tracing.py"
    tracing.write_text(tracing.read_text() + "# touched by a test\n")
    version = tree / "jax" / "version.py"
    version.write_text(version.read_text() + "# touched by a test\n")
    forklib.git("add", "-A", cwd=tree)
    forklib.git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                "-m", "test: a change with modules and an upstream file",
                "-m", "Series-Step: 2", cwd=tree)
    out = self.tmp / "out"
    pq.export(tree, out / "patches", without_upstream_tests=True)
    new = forklib.patch_series(out / "patches")[-1]
    self.assertIn("test-a-change-with-modules", new.name)
    text = new.read_text()
    self.assertIn("+# touched by a test", text)
    self.assertIn("b/jax/_src/pq_test_module.py", text)
    self.assertIn("b/jax/_src/device_tracing.py", text)
    # And the series with it builds (the exported patches lack the hunks of
    # upstream's test files, which the build leaves out anyway).
    r = _build("--patches", out / "patches", "--out", self.tmp / "dist")
    self.assertEqual(r.returncode, 0, r.stderr)

  def test_the_wheel_is_reproducible_and_stamped(self):
    a, b = self.tmp / "a", self.tmp / "b"
    self.assertEqual(_build("--out", a).returncode, 0)
    self.assertEqual(_build("--out", b).returncode, 0)
    (wa,), (wb,) = a.glob("*.whl"), b.glob("*.whl")
    self.assertEqual(wa.name, wb.name)
    self.assertEqual(_sha256(wa), _sha256(wb))
    version = forklib.fork_version(PINS, REPO)
    self.assertEqual(wa.name, f"jax-{version}-py3-none-any.whl")
    with zipfile.ZipFile(wa) as z:
      meta = z.read(f"jax-{version}.dist-info/METADATA").decode()
      self.assertIn(f"\nVersion: {version}\n", meta)
      self.assertIn(f"\nRequires-Dist: jaxlib=={PINS.jaxlib_version}\n", meta)
      # No extra asks for another jaxlib than the pinned one (upstream's [ci]
      # and [minimum-jaxlib] ask for an older one).
      jaxlib_reqs = [line for line in meta.splitlines()
                     if line.startswith("Requires-Dist: jaxlib")]
      self.assertIn('Requires-Dist: jaxlib==%s; extra == "ci"'
                    % PINS.jaxlib_version, jaxlib_reqs)
      for line in jaxlib_reqs:
        self.assertEqual(line.partition(";")[0].strip(),
                         f"Requires-Dist: jaxlib=={PINS.jaxlib_version}", line)
      self.assertIn(f"_release_version: str = {version!r}",
                    z.read("jax/version.py").decode())
      # The modules that the series adds.
      for module in ("device_errors", "device_meshes", "device_stages",
                     "device_table", "device_tracing",
                     "interpreters/shared_lowering"):
        self.assertIn(f"jax/_src/{module}.py", z.namelist())
      record = z.read(f"jax-{version}.dist-info/RECORD").decode()
      self.assertEqual(len(record.splitlines()), len(z.namelist()))
      # A trace sees concrete devices only: no stand-in device in the
      # package. (`AbstractDevice` is upstream's mesh type, in the files
      # that name it upstream.)
      fork_naming = _files_naming(z, ("AbstractDevice", "DeviceBinding",
                                      "DeviceSlot", "answers_alike"))
    with zipfile.ZipFile(UPSTREAM_WHEEL) as z:
      upstream_naming = _files_naming(z, ("AbstractDevice",))
    self.assertTrue(upstream_naming)
    self.assertEqual(fork_naming, upstream_naming)

  def test_the_wheel_installs_into_a_fresh_venv_beside_upstream_jaxlib(self):
    if not WHEELHOUSE.exists():
      self.skipTest("run ./setup.sh first: no wheelhouse")
    dist = self.tmp / "dist"
    self.assertEqual(_build("--out", dist).returncode, 0)
    wheel, = dist.glob("*.whl")
    venv = self.tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    r = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-index",
         "--disable-pip-version-check", "--find-links", str(WHEELHOUSE),
         f"jaxlib=={PINS.jaxlib_version}", str(wheel)],
        capture_output=True, text=True, env=_clean_env(), cwd=self.tmp)
    self.assertEqual(r.returncode, 0, r.stderr)
    r = subprocess.run(
        [str(py), "-c", "import jax, jaxlib; print(jax.__version__); "
         "print(jax.__version_info__); print(jaxlib.__version__); "
         "print(jax.__file__); print(jax.numpy.ones(2).sum())"],
        capture_output=True, text=True, env=_clean_env(), cwd=self.tmp)
    self.assertEqual(r.returncode, 0, r.stderr)
    version, info, jaxlib_version, path, total = r.stdout.splitlines()
    self.assertEqual(version, forklib.fork_version(PINS, REPO))
    self.assertEqual(info, str(tuple(
        int(p) for p in PINS.jax_version.split("."))))
    self.assertEqual(jaxlib_version, PINS.jaxlib_version)
    self.assertTrue(path.startswith(str(venv)), path)
    self.assertEqual(total, "2.0")


if __name__ == "__main__":
  absltest.main()
