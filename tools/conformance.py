"""API-wide differential conformance check of the fork against upstream JAX.

  .venv/bin/python tools/conformance.py [--subset fast] [--only REGEX]
      [--out docs/conformance.md] [--flags-off]

Runs every case of tests/conformance/table.json (every public function of
jax.numpy, jax.numpy.linalg/.fft, jax.lax, jax.lax.linalg, jax.nn,
jax.scipy.special/.linalg/.signal/.stats and jax.random, with arguments
probed once with upstream jax and committed) in three placement modes,
eagerly and under jit, once with the fork (.venv) and once with upstream
(.venv-upstream), each in its own process on 8 virtual CPU devices. It
compares the results (values bitwise, error types) and checks the fork's
outputs against its placement rule (tests/conformance/compare.py), prints a
summary and writes a report (docs/conformance.md for a full run).

With --flags-off the fork runs with every device-tracing flag off
(JAX_DEVICE_TRACING=0, JAX_DEVICE_TRACING_CROSS_DEVICE=0) and must be
upstream: the same values, errors and placement, eagerly and under jit, but
for the independent fixes listed in tests/conformance/expected_flags_off.toml
(report: docs/conformance-flags-off.md for a full run).

Exit status: 0 when every run matched or is an EXPECTED departure; 1 when
there is an unexplained difference; 2 when fewer runs were recorded than the
table calls for (a crash, or nothing ran).
"""

import argparse
import collections
import datetime
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from conformance import compare  # pylint: disable=g-import-not-at-top
from conformance import runner  # pylint: disable=g-import-not-at-top
from conformance import spec  # pylint: disable=g-import-not-at-top
from conformance import table  # pylint: disable=g-import-not-at-top

MIN_FUNCTIONS = 450
ENV = {"XLA_FLAGS": "--xla_force_host_platform_device_count=8",
       "JAX_PLATFORMS": "cpu"}


FLAGS_OFF = {"JAX_DEVICE_TRACING": "0", "JAX_DEVICE_TRACING_CROSS_DEVICE": "0"}


def run_env(python, out, subset, only, log=print, extra_env=None):
  """Runs runner.py under `python`, restarting past any case that crashes
  the process. Returns the runner's records and the crashed qualnames."""
  if os.path.exists(out):
    os.remove(out)
  env = dict(os.environ, **ENV, **(extra_env or {}))
  env["XLA_FLAGS"] = " ".join(
      [os.environ.get("XLA_FLAGS", ""), ENV["XLA_FLAGS"]]).strip()
  crashed, start = [], 0
  while True:
    cmd = [python, os.path.join(ROOT, "tests", "conformance", "runner.py"),
           "--out", out, "--subset", subset, "--start", str(start)]
    if only:
      cmd += ["--only", only]
    p = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True,
                       check=False)
    records = runner.read(out)
    _, started, done = compare.index(records)
    if done:
      return records, crashed
    starts = [r for r in records if r[0] == "start"]
    if not starts or p.returncode == 0:
      log(f"{python}: the runner stopped (rc {p.returncode}) with nothing to "
          f"resume:\n{p.stderr[-3000:]}")
      return records, crashed
    last = starts[-1]
    crashed.append((last[2], f"rc {p.returncode}: "
                    f"{(p.stderr.strip().splitlines() or [''])[-1][:200]}"))
    log(f"{python}: {last[2]} crashed the process (rc {p.returncode}); "
        f"resuming after it")
    start = last[1] + 1


def _by_module(names):
  out = collections.Counter()
  for q in names:
    out[spec.module_of(q)] += 1
  return out


def report(result, cases, fork_meta, up_meta, crashes, counts, args,
           elapsed):
  """The Markdown report."""
  runs = result["runs"]
  unexplained = [(q, m, h, k, d) for q, m, h, diffs in runs
                 for k, d, r in diffs if r is None]
  expected = collections.defaultdict(list)
  for q, m, h, diffs in runs:
    for k, d, r in diffs:
      if r is not None:
        expected[r].append((q, m, h, k, d))
  for q, m, h, d, r in result["upstream_placement"]:
    expected[r or "(upstream placement, no reason listed)"].append(
        (q, m, h, "upstream-placement", d))
  funcs = [c[0] for c in cases]
  fmods = _by_module(funcs)
  per_mod = collections.defaultdict(lambda: [0, 0, 0])
  for q, m, h, diffs in runs:
    row = per_mod[spec.module_of(q)]
    row[0] += 1
    if all(r is not None for _, _, r in diffs):
      row[1] += 1
    if not diffs:
      row[2] += 1
  distinct = len({id(spec.resolve(q)) for q in funcs})
  by_mode = collections.Counter((m, h) for _, m, h, _ in runs)
  L = []
  if args.flags_off:
    L.append("# Differential conformance: the fork with its flags off "
             "against upstream JAX\n")
    L.append("The fork ran with every device-tracing flag off "
             "(`JAX_DEVICE_TRACING=0`, `JAX_DEVICE_TRACING_CROSS_DEVICE=0`): "
             "`tools/conformance.py --flags-off`. Off, the fork must be "
             "upstream: a run passes when its values, errors **and "
             "placement** (every array output's devices and committed flag, "
             "eagerly and under jit) equal upstream's. The only departures "
             "allowed are the independent fixes, listed with their reasons "
             "in `tests/conformance/expected_flags_off.toml`. The rest of "
             "this page is laid out as docs/conformance.md, which checks "
             "the fork with its flags on.\n")
  else:
    L.append("# Differential conformance: the fork against upstream JAX\n")
  L.append(
      f"Generated by `tools/conformance.py` on "
      f"{datetime.date.today().isoformat()}"
      f"{' from saved results' if args.reuse else f' in {elapsed:.0f} s'}: "
      f"fork "
      f"`jax {fork_meta.get('jax_version')}`, upstream "
      f"`jax {up_meta.get('jax_version')}`; subset `{args.subset}`"
      f"{f', only `{args.only}`' if args.only else ''}.\n")
  L.append(
      "Every public function of `jax.numpy` (with `.linalg`, `.fft`), "
      "`jax.lax` (with `.linalg`), `jax.nn`, `jax.scipy` (`special`, "
      "`linalg`, `signal`, `stats`) and `jax.random` is called with the "
      "arguments of `tests/conformance/table.json` (probed once with upstream "
      "by `tests/conformance/probe.py` and committed, so the fork never picks "
      "its own arguments), in each mode below, eagerly and under jit (array "
      "inputs are jit arguments, everything else is closed over), in the "
      "fork's `.venv` and in upstream's `.venv-upstream`. A run *passes* when "
      "the fork's values equal upstream's **bitwise** (eager against eager, "
      "jit against jit), it raises where upstream raises (same type or a "
      "subclass) and only there, and its array outputs are placed right: "
      "under jit, as the placement rule says (docs/design.md, the table "
      "below); eagerly, where upstream's eager mode puts them (eager JAX is "
      "the oracle), or, where the fork departs from it on purpose, as the "
      "rule says, with the reason listed in EXPECTED.\n")
  L.append("| mode | inputs | rule under jit: every output on |\n"
           "|---|---|---|")
  for m, (dev, com) in compare.RULE.items():
    L.append(f"| {m} | {compare.MODE_DOC[m]} | cpu:{dev}, "
             f"{'committed' if com else 'uncommitted'} |")
  L.append("")
  L.append("## Totals\n")
  L.append(f"- public functions checked: **{len(funcs)}** names "
           f"({distinct} distinct objects; aliases such as `jnp.abs`/"
           f"`jnp.absolute` count once there);")
  L.append(f"- runs (function x mode x eager/jit): **{len(runs)}** "
           f"(expected {counts['expected']}); " + ", ".join(
               f"{m}/{h} {n}" for (m, h), n in sorted(by_mode.items())) + ";")
  n_pass = sum(1 for _, _, _, d in runs if not d)
  n_exp = sum(1 for _, _, _, d in runs
              if d and all(r is not None for _, _, r in d))
  L.append(f"- passed: **{n_pass}**; passed with an EXPECTED departure: "
           f"**{n_exp}**; unexplained differences: **{len(unexplained)}** "
           f"(in {len(runs) - n_pass - n_exp} runs);")
  L.append(f"- processes crashed: fork {len(crashes['fork'])}, upstream "
           f"{len(crashes['upstream'])}.\n")
  L.append("| module | functions | runs | pass (incl. EXPECTED) | "
           "pass exactly |\n|---|---:|---:|---:|---:|")
  for mod in spec.MODULES:
    if mod in fmods:
      r = per_mod[mod]
      L.append(f"| `{mod}` | {fmods[mod]} | {r[0]} | {r[1]} | {r[2]} |")
  L.append(f"| **total** | {len(funcs)} | {len(runs)} | "
           f"{n_pass + n_exp} | {n_pass} |\n")
  L.append("## Unexplained differences\n")
  if not unexplained:
    L.append("None.\n")
  else:
    L.append("| function | mode | how | kind | difference |\n|---|---|---|---|---|")
    for q, m, h, k, d in unexplained:
      L.append(f"| `{q}` | {m} | {h} | {k} | {_md(d)} |")
    L.append("")
  L.append("## EXPECTED departures\n")
  L.append("Listed in `tests/conformance/expected.toml` (read into "
           "`EXPECTED` in `tests/conformance/compare.py`), each with its "
           "reason. Where upstream's own placement departs from the "
           "fork's rule the difference is in devices only, never in values "
           "(values are still compared bitwise).\n")
  for reason, items in expected.items():
    L.append(f"- {reason} ({len(items)} runs: " + ", ".join(
        sorted({f'`{q}` {m}/{h}' for q, m, h, _, _ in items})[:8])
             + (", ..." if len({(q, m, h) for q, m, h, _, _ in items}) > 8
                else "") + ")")
  L.append("")
  L.append("## Fork eager against fork jit\n")
  L.append("Not required to be bitwise (XLA fuses under jit); runs whose "
           "eager and jit values differ by more than rtol 1e-3 / atol 1e-5:\n")
  if not result["eager_jit"]:
    L.append("None.\n")
  else:
    for q, m, up in result["eager_jit"]:
      L.append(f"- `{q}` mode {m}" + (" (upstream differs the same way)"
                                       if up else " (**upstream does not**)"))
    L.append("")
  L.append("## Not covered\n")
  L.append("Public functions left out on purpose (`spec.SKIP`): " + ", ".join(
      f"`{q}` ({r})" for q, r in table.SKIPPED.items()) + ".\n")
  L.append("Public functions no argument recipe reached (`NOT_COVERED`): "
           + (", ".join(f"`{q}`" for q in table.NOT_COVERED) or "none")
           + ".\n")
  L.append("## Rerunning\n")
  L.append("```sh\n.venv/bin/python tools/conformance.py            "
           "# everything, writes this file (about 30 min on 2 cores)\n"
           ".venv/bin/python tools/conformance.py --subset fast   "
           "# the subset tests/conformance_test.py runs\n"
           ".venv/bin/python tools/conformance.py --only '^jnp\\.linalg'\n"
           "# after changing tests/conformance/spec.py, re-probe with upstream:"
           "\nXLA_FLAGS=--xla_force_host_platform_device_count=8 "
           "JAX_PLATFORMS=cpu \\\n  .venv-upstream/bin/python "
           "tests/conformance/probe.py\n```\n")
  return "\n".join(L), unexplained


def _md(s):
  return s.replace("|", "\\|").replace("\n", " ")


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--subset", choices=("all", "fast"), default="all")
  p.add_argument("--only", default=None, help="regex on qualnames")
  p.add_argument("--out", default=None,
                 help="report path (default docs/conformance.md for a full "
                 "run, none otherwise)")
  p.add_argument("--workdir", default=os.path.join(ROOT, "build",
                                                   "conformance"))
  p.add_argument("--fork-python", default=os.path.join(ROOT, ".venv", "bin",
                                                       "python"))
  p.add_argument("--upstream-python", default=os.path.join(
      ROOT, ".venv-upstream", "bin", "python"))
  p.add_argument("--reuse", action="store_true",
                 help="compare the last run's result files without running")
  p.add_argument("--flags-off", action="store_true",
                 help="the fork with every device-tracing flag off, against "
                 "upstream's placement too")
  args = p.parse_args(argv)
  full = args.subset == "all" and not args.only
  doc = "conformance-flags-off.md" if args.flags_off else "conformance.md"
  out_doc = args.out or (os.path.join(ROOT, "docs", doc) if full else None)
  for py in (args.fork_python, args.upstream_python):
    if not os.path.exists(py):
      sys.exit(f"{py} is missing: run ./setup.sh first")
  os.makedirs(args.workdir, exist_ok=True)
  t0 = time.time()
  records, crashes = {}, {}
  for side, py in (("fork", args.fork_python),
                   ("upstream", args.upstream_python)):
    off = args.flags_off and side == "fork"
    path = os.path.join(args.workdir,
                        f"{side}{'-flags-off' if off else ''}.pkl")
    if args.reuse:
      records[side], crashes[side] = runner.read(path), []
    else:
      print(f"running {side} ({py}) ...", flush=True)
      t = time.time()
      records[side], crashes[side] = run_env(
          py, path, args.subset, args.only,
          extra_env=FLAGS_OFF if off else None)
      print(f"  {side}: {time.time() - t:.0f} s", flush=True)
  elapsed = time.time() - t0
  cases = runner.selected_cases(args.subset, args.only)
  fork_idx, _, fork_done = compare.index(records["fork"])
  up_idx, _, up_done = compare.index(records["upstream"])
  metas = {s: next((r[1] for r in records[s] if r[0] == "meta"), {})
           for s in records}
  result = compare.compare(cases, fork_idx, up_idx, runner.modes,
                           flags_off=args.flags_off)
  expected_runs = sum(len(runner.modes(*c)) for c in cases)
  counts = dict(expected=expected_runs)
  text, unexplained = report(result, cases, metas["fork"], metas["upstream"],
                             crashes, counts, args, elapsed)
  for side in ("fork", "upstream"):
    for q, why in crashes[side]:
      unexplained.append((q, "-", "-", "crash", f"{side} process: {why}"))
  if out_doc:
    with open(out_doc, "w") as f:
      f.write(text)
  # Summary.
  funcs = {c[0] for c in cases}
  print(f"functions: {len(funcs)}  runs: {len(result['runs'])} "
        f"(expected {expected_runs}); fork recorded {len(fork_idx)}, "
        f"upstream {len(up_idx)}")
  for mod, n in _by_module(funcs).items():
    print(f"  {mod:15s} {n:4d} functions")
  n_pass = sum(1 for r in result["runs"] if not r[3])
  print(f"passed: {n_pass}; with EXPECTED departures: "
        f"{sum(1 for r in result['runs'] if r[3] and all(d[2] for d in r[3]))}"
        f"; unexplained differences: {len(unexplained)}")
  for q, m, h, k, d in unexplained[:200]:
    print(f"  UNEXPLAINED {q} {m}/{h} {k}: {d[:160]}")
  if out_doc:
    print(f"report: {os.path.relpath(out_doc, ROOT)}")
  short = (len(fork_idx) < expected_runs or len(up_idx) < expected_runs
           or not (fork_done and up_done) or expected_runs == 0
           or (full and len(funcs) < MIN_FUNCTIONS))
  if short:
    print(f"FAIL: fewer runs than expected ({expected_runs}), or a runner did "
          f"not finish, or fewer than {MIN_FUNCTIONS} functions")
    return 2
  return 1 if unexplained else 0


if __name__ == "__main__":
  sys.exit(main())
