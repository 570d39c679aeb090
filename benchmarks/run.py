#!/usr/bin/env python3
"""Benchmarks the fork against upstream jax 0.12.0.1, side by side.

  .venv/bin/python benchmarks/run.py [--rounds N] [--out docs/benchmarks.md]
      [--only TEXT]... [--skip TEXT]... [--no-instructions]

--only TEXT (repeatable) measures only the rows whose name contains TEXT,
with their counts; --skip TEXT leaves out the rows whose name contains TEXT.
Rows left out are not run at all, in callgrind or in the rounds. A filtered
run prints its tables but writes docs/benchmarks.md only if --out is given.
A quick smoke of some rows, e.g.:

  .venv/bin/python benchmarks/run.py --only "array API" --rounds 1 \
      --repeats 1 --no-instructions

A full run takes about 15 minutes on 2 idle cores, most of it the
callgrind pass, and most of that the "first call on 8 devices (200-layer
MLP grad)" row: 8 compiles of a large program per environment, under
callgrind about 60 times slower; --skip "200-layer MLP grad)" leaves it
out.

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
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORKER = REPO / "benchmarks" / "worker.py"
ENVS = {"fork": REPO / ".venv" / "bin" / "python",
        "upstream": REPO / ".venv-upstream" / "bin" / "python"}

GOALS = [("dispatch:", 1.02), ("eager:", 1.03), ("trace+lower:", 1.03),
         ("first call", 1.05), ("peak RSS", 1.02)]


CROSS = "cross-device: "
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


def run_worker(python: Path, which: str, repeats: int, filters=()) -> dict:
  env = dict(os.environ, BENCH_REPEATS=str(repeats), PYTHONPATH="")
  r = subprocess.run([str(python), str(WORKER), which, *filters],
                     capture_output=True, text=True, env=env, cwd=REPO)
  if r.returncode != 0:
    raise RuntimeError(f"{python} {WORKER} {which} failed:\n{r.stderr[-3000:]}")
  return json.loads(r.stdout.strip().splitlines()[-1])


def run_callgrind(python: Path, tmp: Path, filters=()) -> subprocess.Popen:
  out = tmp / f"{python.parent.parent.name}.cg"
  env = dict(os.environ, PYTHONPATH="", PYTHONHASHSEED="0")
  return subprocess.Popen(
      ["valgrind", "--tool=callgrind", "--dump-before=getppid",
       "--separate-threads=yes",
       f"--callgrind-out-file={out}", str(python), str(WORKER),
       "instructions", *filters], stdout=subprocess.PIPE,
      stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)


def collect_callgrind(proc: subprocess.Popen, python: Path, tmp: Path
                      ) -> dict[str, float]:
  stdout, stderr = proc.communicate()
  if proc.returncode != 0:
    raise RuntimeError(f"callgrind run of {python} failed:\n{stderr[-3000:]}")
  labels = json.loads(stdout.strip().splitlines()[-1])["labels"]
  out = tmp / f"{python.parent.parent.name}.cg"
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
  args = ap.parse_args(argv)
  if args.out is None and not (args.only or args.skip):
    args.out = REPO / "docs" / "benchmarks.md"
  filters = filter_args(args.only, args.skip)
  for name, py in ENVS.items():
    if not py.exists():
      print(f"error: {py} is missing; run ./setup.sh first", file=sys.stderr)
      return 1

  instr = {}
  if not args.no_instructions:
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
      procs = {n: run_callgrind(p, Path(tmp), filters)
               for n, p in ENVS.items()}
      instr = {n: collect_callgrind(procs[n], ENVS[n], Path(tmp))
               for n in ENVS}
    print("instruction counts done", flush=True)

  per_round = {"fork": [], "upstream": []}
  versions = {}
  for r in range(args.rounds):
    order = ("fork", "upstream") if r % 2 == 0 else ("upstream", "fork")
    for name in order:
      for which in ("all", "memory"):
        out = run_worker(ENVS[name], which, args.repeats, filters)
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
    per = [min(o["results"][metric]) for o in per_round[name]]
    return statistics.median(per), min(per), max(per)

  metrics = [m for m in per_round["fork"][0]["results"]
             if not m.startswith(CROSS)]
  rows, misses = [], []
  for m in metrics:
    f_med, f_lo, f_hi = summary("fork", m)
    u_med, u_lo, u_hi = summary("upstream", m)
    ratio = f_med / u_med
    goal = goal_for(m)
    met = "" if goal is None else ("yes" if ratio <= goal else "**no**")
    if goal is not None and ratio > goal:
      misses.append(m)
    rows.append(f"| {m} | {fmt(m, u_med)} ({fmt(m, u_lo)}–{fmt(m, u_hi)}) | "
                f"{fmt(m, f_med)} ({fmt(m, f_lo)}–{fmt(m, f_hi)}) | "
                f"{ratio:.3f} | {'' if goal is None else f'≤ {goal:.2f}'} | "
                f"{met} |")
  counts = []
  for k in per_round["fork"][0]["counts"]:
    fv = sorted({o["counts"][k] for o in per_round["fork"]})
    uv = sorted({o["counts"].get(k, "–") for o in per_round["upstream"]})
    counts.append(f"| {k} | {', '.join(map(str, uv))} | "
                  f"{', '.join(map(str, fv))} |")

  cross_time_rows, cross_misses = _cross_rows(
      {m: summary("fork", m)[0] for m in per_round["fork"][0]["results"]
       if m.startswith(CROSS)}, fmt_time)
  cross_instr_rows, cross_instr_misses = _cross_rows(
      instr.get("fork", {}), fmt_instructions)
  misses += cross_misses + [f"{m} (instructions)" for m in cross_instr_misses]

  instr_rows = []
  for m in instr.get("fork", {}):
    if m.startswith(CROSS):
      continue
    f, u = instr["fork"][m], instr["upstream"][m]
    ratio = f / u
    goal = goal_for(m)
    if goal is not None and ratio > goal:
      misses.append(f"{m} (instructions)")
    met = "" if goal is None else ("yes" if ratio <= goal else "**no**")
    instr_rows.append(
        f"| {m} | {fmt_instructions(u)} | {fmt_instructions(f)} | "
        f"{ratio:.3f} | {'' if goal is None else f'≤ {goal:.2f}'} | {met} |")

  now = datetime.datetime.now(datetime.timezone.utc)
  header = (
      f"Measured {now:%Y-%m-%d %H:%M} UTC on {platform.machine()} "
      f"({os.cpu_count()} cores, {platform.python_implementation()} "
      f"{platform.python_version()}), 8 virtual CPU devices; upstream "
      f"jax {versions['upstream']} against the fork, jax {versions['fork']}, "
      f"both on jaxlib 0.12.0.1. {args.rounds} rounds alternating fork and "
      f"upstream, {args.repeats} repetitions per round; each round counts "
      "its best repetition, and the table gives the median over rounds with "
      "their range (min–max).")
  table = "\n".join([
      "| measurement | upstream | fork | fork/upstream | goal | met |",
      "|---|---|---|---|---|---|", *rows])
  count_table = "\n".join([
      "| count | upstream | fork |", "|---|---|---|", *counts])
  instr_table = "\n".join([
      "| instructions per operation | upstream | fork | fork/upstream | goal "
      "| met |", "|---|---|---|---|---|---|", *instr_rows])
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
  text = (f"{header}\n\nInstructions (callgrind, exact):\n\n{instr_table}\n\n"
          f"Wall time:\n\n{table}\n\n{count_table}\n\n{cross_text}")
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
