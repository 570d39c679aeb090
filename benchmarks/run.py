#!/usr/bin/env python3
"""Benchmarks the fork against upstream jax (the pinned release), side by side.

  .venv/bin/python benchmarks/run.py [--rounds N] [--out docs/benchmarks.md]
      [--only TEXT]... [--skip TEXT]... [--no-instructions]
  .venv/bin/python benchmarks/run.py --profile ROW

--only TEXT (repeatable) measures only the rows whose name contains TEXT,
with their counts; --skip TEXT leaves out the rows whose name contains TEXT.
Rows left out are not run at all, in callgrind or in the rounds. A filtered
run prints its tables but writes docs/benchmarks.md only if --out is given.
A quick smoke of some rows, e.g.:

  .venv/bin/python benchmarks/run.py --only "array API" --rounds 1 \
      --repeats 1 --no-instructions

A full run takes about 50 minutes on 2 idle cores, most of it the
callgrind pass, and most of that the "first call on 8 devices (200-layer
MLP grad)" row: 8 compiles of a large program per environment (and in the
fork 8 traces), under callgrind about 60 times slower; --skip "200-layer
MLP grad)" leaves it out. --rounds 0 counts instructions only.

Two measurements, both side by side in one run:

- Instructions: benchmarks/worker.py runs once per environment under
  valgrind's callgrind (both at once: counts do not depend on load), which
  counts the instructions each measured block executes. They are exact and
  repeatable, so they decide the goals.
- Wall time: the worker runs alternately in .venv (the fork) and
  .venv-upstream, N rounds each (fork, upstream, upstream, fork, ... so that
  drift cancels); each round counts the best of its repetitions, and the
  table gives the median over rounds with their range. On a shared machine
  these move by tens of percent from round to round.

Counts (Python-path calls, traces, lowerings, compiles) are exact. The table
is printed and written between the markers of docs/benchmarks.md.

Cross-device computations (one jit whose values are on several devices) run
only on the fork: upstream drops a device_put inside jit. They are compared
with the same program split by hand into per-device jits joined by
jax.device_put, and with eager mode, in the fork's environment.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORKER = REPO / "benchmarks" / "worker.py"
FORK = REPO / ".venv" / "bin" / "python"
UPSTREAM = REPO / ".venv-upstream" / "bin" / "python"
# Every device-tracing flag off: the series as proposed upstream.
FLAGS_OFF = {"JAX_DEVICE_TRACING": "0", "JAX_DEVICE_TRACING_CROSS_DEVICE": "0"}
# name -> (python, environment variables)
ENVS = {"fork": (FORK, {}), "off": (FORK, FLAGS_OFF), "upstream": (UPSTREAM, {})}

# Goals on instructions, fork/upstream. With the flags on (the fork's
# defaults), by row; with every flag off, every row: a proposal that ships
# off must cost nothing off.
GOALS = [("dispatch:", 1.01), ("eager:", 1.03), ("trace+lower:", 1.02),
         ("trace:", 1.05), ("first call", 1.02), ("peak RSS", 1.02)]
GOAL_OFF = 1.005


CROSS = "cross-device: "
# First-call rows and the one-trace row of the same program.
FIRST_CALLS = {
    "first call on 8 new devices (trace+lower+compile)":
        "trace: the first-call program",
    "first call on 8 devices (200-layer MLP grad)":
        "trace: the 200-layer MLP grad",
}
FIRST_CALL_DEVICES = 8
FIRST_CALL_GOAL = 1.02
# jit of a cross-device program against the hand-split version and eager
# mode: no slower than the hand-split version; faster than eager mode for
# programs of 10 ops or more.
CROSS_GOALS = {"hand-split": 1.0, "eager": 1.0}


def _cross_rows(value, fmt_value):
  """Rows of the cross-device table from value(metric) of the fork."""
  programs = []
  for m in value.keys():
    if m.startswith(CROSS):
      name = m[len(CROSS):].rsplit(" (", 1)[0]
      if name not in programs:
        programs.append(name)
  rows, misses = [], []
  for name in programs:
    v = {k: value.get(f"{CROSS}{name} ({k})")
         for k in ("jit", "hand-split", "eager")}
    if None in v.values():
      continue
    cells = [fmt_value(v["jit"]), fmt_value(v["hand-split"]),
             fmt_value(v["eager"])]
    for other, goal in CROSS_GOALS.items():
      ratio = v["jit"] / v[other]
      applies = other != "eager" or int(name.split()[0]) >= 10
      ok = ratio <= goal
      if applies and not ok:
        misses.append(f"{name}: jit/{other}")
      cells.append(f"{ratio:.3f}" + ("" if not applies else
                                     " (yes)" if ok else " (**no**)"))
    rows.append(f"| {name} | " + " | ".join(cells) + " |")
  return rows, misses


def goal_for(metric):
  for prefix, goal in GOALS:
    if metric.startswith(prefix):
      return goal
  return None


def filter_args(only=(), skip=()) -> list[str]:
  return ([a for t in only for a in ("--only", t)] +
          [a for t in skip for a in ("--skip", t)])


def _filters_for(name: str, filters) -> list[str]:
  # Cross-device programs need the flags on: upstream drops a device_put
  # inside jit (the worker leaves out their jit rows there).
  return [*filters, "--skip", CROSS] if name == "off" else list(filters)


def run_worker(name: str, which: str, repeats: int, filters=()) -> dict:
  python, extra = ENVS[name]
  env = dict(os.environ, BENCH_REPEATS=str(repeats), PYTHONPATH="", **extra)
  r = subprocess.run([str(python), str(WORKER), which,
                      *_filters_for(name, filters)],
                     capture_output=True, text=True, env=env, cwd=REPO)
  if r.returncode != 0:
    raise RuntimeError(f"{python} {WORKER} {which} failed:\n{r.stderr[-3000:]}")
  return json.loads(r.stdout.strip().splitlines()[-1])


# jaxlib 0.12.1 executes instructions that valgrind 3.19 (Debian 12's) does
# not decode (`vmovq xmm, xmm`, VEX 66 0F D6 in register form, in XXH3 under
# MLIR); valgrind 3.24 (Debian 13's) does. DEVTRACE_VALGRIND names another
# valgrind than the one on PATH.
VALGRIND = os.environ.get("DEVTRACE_VALGRIND", "valgrind")


def run_callgrind(name: str, tmp: Path, filters=()) -> subprocess.Popen:
  python, extra = ENVS[name]
  out = tmp / f"{name}.cg"
  env = dict(os.environ, PYTHONPATH="", PYTHONHASHSEED="0", **extra)
  return subprocess.Popen(
      [VALGRIND, "--tool=callgrind", "--dump-before=getppid",
       "--separate-threads=yes",
       f"--callgrind-out-file={out}", str(python), str(WORKER),
       "instructions", *_filters_for(name, filters)], stdout=subprocess.PIPE,
      stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)


def collect_callgrind(proc: subprocess.Popen, name: str, tmp: Path
                      ) -> dict[str, float]:
  stdout, stderr = proc.communicate()
  if proc.returncode != 0:
    hint = ""
    if "unhandled instruction bytes" in stderr:
      hint = (f"\n{VALGRIND} cannot decode an instruction of jaxlib: use a "
              "newer valgrind (3.24 works with jaxlib 0.12.1; 3.19 does not), "
              "named by DEVTRACE_VALGRIND.")
    raise RuntimeError(f"callgrind run of {name} failed:\n{stderr[-3000:]}"
                       f"{hint}")
  labels = json.loads(stdout.strip().splitlines()[-1])["labels"]
  out = tmp / f"{name}.cg"
  per_op = {}
  for i, label in enumerate(labels, start=1):
    if label is None:
      continue
    name, n = label
    # The main thread, except for first calls: XLA compiles on other threads.
    files = (sorted(Path(out).parent.glob(f"{Path(out).name}.{i}-*"))
             if name.startswith("first call") else [Path(f"{out}.{i}-01")])
    total = 0
    for f in files:
      total += next(int(l.split()[1]) for l in f.read_text().splitlines()
                    if l.startswith("totals:"))
    per_op[name] = total / n
  return per_op


def fmt_instructions(n: float) -> str:
  if n >= 1e9:
    return f"{n / 1e9:.2f} G"
  if n >= 1e6:
    return f"{n / 1e6:.1f} M"
  return f"{n / 1e3:.1f} k"


def fmt_time(s: float) -> str:
  if s < 1e-3:
    return f"{s * 1e6:.2f} µs"
  if s < 1:
    return f"{s * 1e3:.1f} ms"
  return f"{s:.2f} s"


def fmt(metric: str, v: float) -> str:
  return f"{v:.0f} MiB" if "MiB" in metric else fmt_time(v)


def first_call_table(instr) -> tuple[str, list[str]]:
  """First calls against upstream plus the traces the design adds.

  The price of soundness: a trace is keyed on the devices, so a first call
  on k devices traces k times where upstream traces once. Its goal is stated
  against upstream plus those extra traces, at upstream's cost of one trace
  of the same program. Returns the table (empty without the rows) and the
  misses.
  """
  rows, misses = [], []
  extra = FIRST_CALL_DEVICES - 1
  for m, trace_row in FIRST_CALLS.items():
    f, u = instr.get("fork", {}).get(m), instr.get("upstream", {}).get(m)
    t = instr.get("upstream", {}).get(trace_row)
    if None in (f, u, t):
      continue
    base = u + extra * t
    ok = f / base <= FIRST_CALL_GOAL
    if not ok:
      misses.append(f"{m} (against upstream plus {extra} traces)")
    rows.append(
        f"| {m} | {fmt_instructions(u)} | {fmt_instructions(t)} | "
        f"{fmt_instructions(base)} | {fmt_instructions(f)} | {f / u:.3f} | "
        f"{f / base:.3f} | {'yes' if ok else '**no**'} |")
  if not rows:
    return "", misses
  return (f"First calls on {FIRST_CALL_DEVICES} devices against upstream "
          f"plus the {extra} traces the design adds (instructions; goal "
          f"≤ {FIRST_CALL_GOAL}):\n\n"
          f"| first call | upstream | upstream, one trace | upstream + "
          f"{extra} traces | fork | fork/upstream | fork/(upstream + traces) "
          "| met |\n|---|---|---|---|---|---|---|---|\n" + "\n".join(rows)
          + "\n\n"), misses


def profile(row: str, top: int = 25) -> int:
  """Prints where the Python lines of a row's block differ from upstream's."""
  counts = {name: run_worker(name, "lines", 1, ["--row", row])["lines"]
            for name in ENVS}
  up = counts["upstream"]
  print(f"Python lines executed in one block of {row!r}: upstream "
        f"{sum(up.values())}, fork {sum(counts['fork'].values())}, "
        f"flags off {sum(counts['off'].values())}")
  for name in ("fork", "off"):
    mine = counts[name]
    diff = sorted(((mine.get(k, 0) - up.get(k, 0), k)
                   for k in set(up) | set(mine)), key=lambda t: -abs(t[0]))
    print(f"\n{name} against upstream, the {top} largest differences "
          "(lines, function):")
    for d, k in diff[:top]:
      if d:
        print(f"  {d:+7d}  {k}")
  return 0


def main(argv=None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--rounds", type=int, default=5)
  ap.add_argument("--repeats", type=int, default=5,
                  help="repetitions of each measurement inside a round")
  ap.add_argument("--out", type=Path, default=None,
                  help="the page whose results to rewrite (default "
                  "docs/benchmarks.md; none for a filtered run)")
  ap.add_argument("--no-instructions", action="store_true",
                  help="skip the callgrind instruction counts")
  ap.add_argument("--only", action="append", default=[], metavar="TEXT",
                  help="measure only the rows whose name contains TEXT "
                  "(repeatable)")
  ap.add_argument("--skip", action="append", default=[], metavar="TEXT",
                  help="leave out the rows whose name contains TEXT "
                  "(repeatable)")
  ap.add_argument("--profile", metavar="ROW", default=None,
                  help="instead of measuring: the Python lines each "
                  "environment executes in ROW's block, by function, and "
                  "where the fork's and flags-off's differ from upstream's "
                  "(rows: the trace rows, the two first calls, the eager rows but the "
                  "array API's)")
  args = ap.parse_args(argv)
  if args.profile:
    return profile(args.profile)
  if args.out is None and not (args.only or args.skip):
    args.out = REPO / "docs" / "benchmarks.md"
  elif args.out is not None and str(args.out) == "none":
    args.out = None  # as earlier notes spelled "no file"
  filters = filter_args(args.only, args.skip)
  for py in (FORK, UPSTREAM):
    if not py.exists():
      print(f"error: {py} is missing; run ./setup.sh first", file=sys.stderr)
      return 1

  instr = {}
  if not args.no_instructions:
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
      procs = {n: run_callgrind(n, Path(tmp), filters) for n in ENVS}
      instr = {n: collect_callgrind(procs[n], n, Path(tmp)) for n in ENVS}
    print("instruction counts done", flush=True)

  per_round = {n: [] for n in ENVS}
  versions = {}
  for r in range(args.rounds):
    # Alternating (fork, off, upstream, upstream, off, fork, ...) so that
    # drift cancels.
    order = list(ENVS) if r % 2 == 0 else list(reversed(ENVS))
    for name in order:
      for which in ("all", "memory", "first-call-memory"):
        out = run_worker(name, which, args.repeats, filters)
        versions[name] = out["version"]
        if which == "all":
          per_round[name].append(out)
        else:
          per_round[name][-1]["results"].update(out["results"])
    print(f"round {r + 1}/{args.rounds} done", flush=True)

  def summary(name, metric):
    # A round's value is the best of its repetitions (timing noise on a
    # shared machine only ever adds time); the result is the median over
    # rounds, with their range.
    per = [min(o["results"][metric]) for o in per_round[name]
           if metric in o["results"]]
    if not per:
      return None
    return statistics.median(per), min(per), max(per)

  misses = []

  def verdict(metric, ratio, goal, what):
    if goal is None:
      return ""
    if ratio > goal:
      misses.append(f"{metric} ({what})")
      return "**no**"
    return "yes"

  def off_cells(metric, ratio_off, fmt_off):
    goal = GOAL_OFF if goal_for(metric) is not None else None
    return (f"{fmt_off} | {ratio_off:.3f} | "
            f"{'' if goal is None else f'≤ {goal}'} | "
            f"{verdict(metric, ratio_off, goal, 'instructions, flags off')} |")

  # Wall times illustrate; the goals are decided on instructions.
  # --rounds 0 measures instructions only.
  first = (per_round["fork"][0] if per_round["fork"] else
           {"results": {}, "counts": {}})
  metrics = [m for m in first["results"] if not m.startswith(CROSS)]
  rows = []
  for m in metrics:
    cells = []
    u_med = summary("upstream", m)[0]
    for name in ("upstream", "fork", "off"):
      sm = summary(name, m)
      if sm is None:
        cells.append("–")
        continue
      med, lo, hi = sm
      cells.append(f"{fmt(m, med)} ({fmt(m, lo)}–{fmt(m, hi)})")
      if name != "upstream":
        cells.append(f"{med / u_med:.3f}")
    rows.append(f"| {m} | " + " | ".join(cells) + " |")
  counts = []
  for k in first["counts"]:
    vals = [", ".join(map(str, sorted({o["counts"].get(k, "–")
                                       for o in per_round[n]})))
            for n in ("upstream", "fork", "off")]
    counts.append(f"| {k} | " + " | ".join(vals) + " |")

  cross_time_rows, cross_misses = _cross_rows(
      {m: summary("fork", m)[0] for m in first["results"]
       if m.startswith(CROSS)}, fmt_time)
  cross_instr_rows, cross_instr_misses = _cross_rows(
      instr.get("fork", {}), fmt_instructions)
  misses += cross_misses + [f"{m} (instructions)" for m in cross_instr_misses]

  instr_rows = []
  for m in instr.get("fork", {}):
    if m.startswith(CROSS):
      continue
    f, u = instr["fork"][m], instr["upstream"][m]
    # A first call's goal with the flags on is against upstream plus the
    # traces the design adds (the table after this one).
    goal = None if m in FIRST_CALLS else goal_for(m)
    row = (f"| {m} | {fmt_instructions(u)} | {fmt_instructions(f)} | "
           f"{f / u:.3f} | {'' if goal is None else f'≤ {goal:.2f}'} | "
           f"{verdict(m, f / u, goal, 'instructions, flags on')} | ")
    o = instr["off"].get(m)
    row += ("– | | | |" if o is None else
            off_cells(m, o / u, fmt_instructions(o)))
    instr_rows.append(row)

  first_text, first_misses = first_call_table(instr)
  misses += first_misses

  now = datetime.datetime.now(datetime.timezone.utc)
  header = (
      f"Measured {now:%Y-%m-%d %H:%M} UTC on {platform.machine()} "
      f"({os.cpu_count()} cores, {platform.python_implementation()} "
      f"{platform.python_version()}), 8 virtual CPU devices; upstream "
      f"jax {versions.get('upstream')} against the fork, jax "
      f"{versions.get('fork')}, "
      "with its defaults (flags on) and with every device-tracing flag off, "
      f"all on jaxlib {importlib.metadata.version('jaxlib')}. "
      f"{args.rounds} rounds alternating the three, "
      f"{args.repeats} repetitions per round; each round counts "
      "its best repetition, and the table gives the median over rounds with "
      "their range (min–max).")
  table = "\n".join([
      "| measurement | upstream | fork | fork/upstream | fork, flags off | "
      "off/upstream |", "|---|---|---|---|---|---|", *rows])
  count_table = "\n".join([
      "| count | upstream | fork | fork, flags off |", "|---|---|---|---|",
      *counts])
  instr_table = "\n".join([
      "| instructions per operation | upstream | fork | fork/upstream | goal "
      "| met | fork, flags off | off/upstream | goal off | met off |",
      "|---|---|---|---|---|---|---|---|---|---|", *instr_rows])
  cross_head = ("| program (fork) | jit | hand-split | eager | jit/hand-split "
                "(goal ≤ 1) | jit/eager (goal ≤ 1 from 10 ops) |\n"
                "|---|---|---|---|---|---|\n")
  cross_text = ""
  if cross_instr_rows:
    cross_text += ("Cross-device programs, instructions per call (callgrind):"
                   "\n\n" + cross_head + "\n".join(cross_instr_rows) + "\n\n")
  if cross_time_rows:
    cross_text += ("Cross-device programs, wall time per call:\n\n" +
                   cross_head + "\n".join(cross_time_rows) + "\n")
  text = (f"{header}\n\nInstructions (callgrind, exact; they decide the "
          f"goals):\n\n{instr_table}\n\n{first_text}Wall time "
          "(illustrates):\n\n"
          f"{table}\n\n{count_table}\n\n{cross_text}")
  print(text)
  if misses:
    print("goals not met: " + "; ".join(misses))
  if args.out:
    doc = args.out.read_text() if args.out.exists() else ""
    begin, end = "<!-- results: begin -->", "<!-- results: end -->"
    if begin in doc and end in doc:
      doc = (doc[:doc.index(begin) + len(begin)] + "\n" + text +
             doc[doc.index(end):])
    else:
      doc = f"# Benchmarks\n\n{begin}\n{text}{end}\n"
    args.out.write_text(doc)
    print(f"wrote {args.out}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
