# Differential conformance, fast subset: the fork against upstream JAX.
#
# About 60 public functions spread over jax.numpy (with .linalg, .fft),
# jax.lax (with .linalg), jax.nn, jax.scipy (special, linalg, signal, stats)
# and jax.random run, with the committed arguments of
# tests/conformance/table.json, in every placement mode (inputs committed to
# cpu:3; uncommitted under default_device(cpu:5); mixed; device=; an unused
# committed jit argument), eagerly and under jit. The fork runs in this
# process; upstream runs the same cases in .venv-upstream, in a subprocess.
# Values must equal upstream's bitwise, errors must be upstream's, and every
# output must follow the fork's placement rule (tests/conformance/compare.py).
#
# The whole API (about 850 functions) is checked by tools/conformance.py.

import os
import subprocess
import sys
import tempfile
import unittest
import warnings

from absl.testing import absltest
from absl.testing import parameterized

import numpy as np

import jax
from jax._src import config
from jax._src import test_util as jtu

config.parse_flags_with_absl()
jtu.request_cpu_devices(8)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conformance import compare  # pylint: disable=g-import-not-at-top
from conformance import runner  # pylint: disable=g-import-not-at-top
from conformance import spec  # pylint: disable=g-import-not-at-top
from conformance import table  # pylint: disable=g-import-not-at-top

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UPSTREAM_PYTHON = os.path.join(ROOT, ".venv-upstream", "bin", "python")
FAST = runner.selected_cases("fast")


def _run_upstream():
  """Upstream's records of the fast subset: ({(q, mode, how): rec}, done)."""
  with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "upstream.pkl")
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=8")
    p = subprocess.run(
        [UPSTREAM_PYTHON, os.path.join(ROOT, "tests", "conformance",
                                       "runner.py"),
         "--out", out, "--subset", "fast"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=900,
        check=False)
    records, _, done = compare.index(runner.read(out))
  return records, done, p.stderr[-2000:]


class ConformanceTableTest(jtu.JaxTestCase):
  """The committed table and the fast subset themselves."""

  def test_the_table_covers_the_public_api(self):
    names = [q for q, _, _ in table.CASES]
    self.assertLen(set(names), len(names))
    self.assertGreaterEqual(len({id(spec.resolve(q)) for q in names}), 450)
    self.assertEqual({spec.module_of(q) for q in names}, set(spec.MODULES))

  def test_the_fast_subset_spans_every_module(self):
    self.assertBetween(len(FAST), 40, 80)
    self.assertLen(FAST, len(spec.FAST), "a FAST name is not in the table")
    self.assertEqual({spec.module_of(q) for q, _, _ in FAST},
                     set(spec.MODULES))
    runs = {(m, h) for c in FAST for m, h in runner.modes(*c)}
    self.assertEqual(runs, {(m, h) for m in "CUMD" for h in ("eager", "jit")}
                     | {("J", "jit")} | {(m, "aot") for m in "CU"})

  def test_the_check_can_fail(self):
    ok = dict(ok=True, leaves=[dict(
        kind="array", dtype="float32", shape=(1,), data_dtype="float32",
        bytes=b"\0\0\0\0", devices=[3], committed=True)])
    neg_zero = dict(ok=True, leaves=[dict(ok["leaves"][0],
                                          bytes=b"\0\0\0\x80")])
    self.assertEmpty(compare.check_run("f", "C", "jit", ok, ok))
    self.assertEqual([k for k, _ in compare.check_run(
        "f", "C", "jit", neg_zero, ok)], ["value"])
    self.assertEqual([k for k, _ in compare.check_run(
        "f", "U", "jit", ok, ok)], ["placement"])
    # Eagerly, upstream's placement is the oracle; a departure from it must
    # follow the rule (and then needs a reason in EXPECTED).
    elsewhere = dict(ok=True, leaves=[dict(ok["leaves"][0], devices=[0],
                                           committed=False)])
    self.assertEmpty(compare.check_run("f", "C", "eager", elsewhere,
                                       elsewhere))
    self.assertEqual([k for k, _ in compare.check_run(
        "f", "C", "eager", elsewhere, ok)], ["placement"])
    self.assertEqual([k for k, _ in compare.check_run(
        "f", "C", "eager", ok, elsewhere)], ["eager-rule"])
    self.assertEqual([k for k, _ in compare.check_run(
        "f", "C", "jit", elsewhere, elsewhere)], ["placement"])
    err = dict(ok=False, error=dict(type="TypeError", mro=["TypeError"],
                                    message=""))
    self.assertEqual([k for k, _ in compare.check_run(
        "f", "C", "eager", err, ok)], ["fork-raises"])
    self.assertEqual([k for k, _ in compare.check_run(
        "f", "C", "eager", ok, err)], ["fork-succeeds"])

  def test_the_check_of_a_program_can_fail(self):
    # Under jit and AOT a program's oracle is the fork's eager run.
    leaf = dict(kind="array", dtype="int32", shape=(), data_dtype="int32",
                devices=[3], committed=True)
    run = lambda *values, **kw: dict(ok=True, leaves=[
        dict(leaf, bytes=np.int32(v).tobytes(), **kw) for v in values])
    q = "family.callbacks.ordered_io_callbacks_across_devices"
    in_order, reordered = run(1, 2, 3), run(1, 3, 2)
    upstream = run(1, 2, 3)
    self.assertEmpty(compare.check_run(q, "C", "jit", in_order, upstream,
                                       fork_eager=in_order))
    self.assertEqual([k for k, _ in compare.check_run(
        q, "C", "jit", reordered, upstream, fork_eager=in_order)], ["value"])
    self.assertEqual([k for k, _ in compare.check_run(
        q, "C", "jit", run(1, 2, 3, devices=[5]), upstream,
        fork_eager=in_order)], ["placement"])
    # Committed on the mode's device where eagerly it is not: the rule.
    self.assertEmpty(compare.check_run(
        q, "C", "jit", in_order, upstream,
        fork_eager=run(1, 2, 3, devices=[0], committed=False)))
    # The AOT stages agree with each other and the call.
    s3, s5 = "SDS(3)", "SDS(5)"
    aot = lambda traced: dict(in_order, aot=dict(
        traced=[traced], lowered=[traced], compiled=[s3], call=[s3]))
    q = "family.aot.computed_where_committed"
    self.assertEmpty(compare.check_run(q, "C", "aot", aot(s3), upstream,
                                       fork_eager=in_order))
    self.assertEmpty(compare.check_run(q, "C", "aot", aot("None"), upstream,
                                       fork_eager=in_order))
    self.assertEqual([k for k, _ in compare.check_run(
        q, "C", "aot", aot(s5), upstream, fork_eager=in_order)], ["aot"])
    # A donated argument is deleted where upstream's jit deletes it.
    q = "family.donation.read_by_a_stage_after_its_transfer"
    kept, deleted = dict(in_order, deleted=[False]), dict(in_order,
                                                          deleted=[True])
    self.assertEmpty(compare.check_run(q, "C", "jit", deleted, deleted,
                                       fork_eager=in_order))
    self.assertEqual([k for k, _ in compare.check_run(
        q, "C", "jit", kept, deleted, fork_eager=in_order)], ["donation"])


class ConformanceTest(jtu.JaxTestCase):
  """The fast subset, the fork (in this process) against upstream."""

  upstream = None
  # JAX's defaults, as in upstream's runner process: no strict promotion, no
  # rank-promotion errors, no extra checks.
  _default_thread_local_config = {}

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    if not os.path.exists(UPSTREAM_PYTHON):
      raise unittest.SkipTest(
          f"{UPSTREAM_PYTHON} is missing: ./setup.sh builds it")
    if jax.device_count() < 8:
      raise unittest.SkipTest("needs 8 devices")
    records, done, stderr = _run_upstream()
    if not done:
      raise AssertionError(f"upstream's runner did not finish:\n{stderr}")
    cls.upstream = records

  def test_upstream_ran_every_case(self):
    expected = {(q, m, h) for q, a, k in FAST for m, h in runner.modes(q, a, k)}
    self.assertEqual(set(self.upstream), expected)

  @parameterized.named_parameters(
      (q.replace(".", "_"), q, args, kwargs) for q, args, kwargs in FAST)
  @jtu.thread_unsafe_test()  # changes config (default_device)
  def test_function(self, qualname, args, kwargs):
    # Values (bitwise), errors, devices and committed flags: every difference
    # that compare.EXPECTED does not explain, collected over the modes.
    flag = getattr(config, "device_tracing_cross_device", None)
    if qualname.startswith(spec.FAMILY) and not (flag is not None and
                                                 flag.value):
      self.skipTest("a program family needs jax_device_tracing_cross_device "
                    "(step 2)")
    problems, eager = [], {}
    for mode, how in runner.modes(qualname, args, kwargs):
      with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # as in upstream's runner process
        fork = runner.call(qualname, args, kwargs, mode, how)
      if how == "eager":
        eager[mode] = fork  # a program's oracle under jit and AOT
      upstream = self.upstream.get((qualname, mode, how))
      self.assertIsNotNone(upstream, f"no upstream record of {mode}/{how}")
      for kind, desc in compare.check_run(qualname, mode, how, fork,
                                          upstream, fork_eager=eager.get(mode)):
        if compare.expected_reason(qualname, mode, how, kind) is None:
          problems.append(f"{mode}/{how} {kind}: {desc}")
    self.assertEmpty(problems, f"{qualname}:\n" + "\n".join(problems))


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
