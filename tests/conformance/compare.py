"""The fork's placement rule, the EXPECTED departures, and the comparison.

A *run* is one (function, mode, how). For each run the fork's record is
checked against

- upstream's record of the same run: values bitwise (dtype, shape and raw
  bytes of every array leaf, so -0.0 against 0.0 and NaN payloads count),
  and errors (if upstream raises, the fork raises the same type or a
  subclass; if upstream succeeds, so does the fork);
- placement. Under jit: the placement RULE (every array output on the
  mode's device, with the mode's committed flag; docs/design.md). Eagerly,
  eager JAX is the oracle: every array output where upstream's eager mode
  puts it, committed as upstream commits it; where the fork departs from
  upstream eagerly it must follow the RULE instead, and the departure needs
  a reason in EXPECTED (kind "eager-rule").

Where upstream's placement departs from the rule it is recorded for the
report.
"""

import os
import re
import tomllib

import numpy as np

# mode -> (device id, committed) of every array output, eager and jit.
RULE = {
    "C": (3, True),   # every array input committed to cpu:3
    "U": (5, False),  # uncommitted inputs, call under default_device(cpu:5)
    "M": (3, True),   # first input committed to cpu:3, others uncommitted
    "D": (3, True),   # device=cpu:3
    "J": (3, True),   # jit with an unused argument committed to cpu:3
}

MODE_DOC = {
    "C": "every array input committed to cpu:3",
    "U": "every array input uncommitted, made and called under "
         "default_device(cpu:5)",
    "M": "first array input committed to cpu:3, the others uncommitted "
         "(made under default_device(cpu:5)), called outside",
    "D": "creation surface: device=cpu:3",
    "J": "creation surface, jit only: an extra unused argument committed to "
         "cpu:3",
}


def _read_expected(path):
  """The departures of an expected.toml file, in order.

  Args:
    path: the TOML file, with a `[[departure]]` table a departure.

  Returns:
    A list of (qualname regex, mode regex, how regex, kind regex, reason).
  """
  with open(path, "rb") as f:
    departures = tomllib.load(f)["departure"]
  return [(d["qualname"], d["mode"], d["how"], d["kind"], d["reason"])
          for d in departures]


# Known, deliberate departures: (qualname regex, mode regex, how regex, kind
# regex, reason), read from expected.toml (which says what each field means).
# kind is one of DIFF_KINDS, or "upstream-placement" for where upstream's own
# placement departs from the fork's rule (reported, never a failure: listed so
# each has its reason).
EXPECTED = _read_expected(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "expected.toml"))

# With every device-tracing flag off the fork must be upstream: the same
# values, errors and placement, eagerly and under jit. Departures there are
# the independent fixes (an upstream crash or a silently wrong device or
# value replaced by the right result or a clear error), each listed with
# its reason in expected_flags_off.toml.
EXPECTED_FLAGS_OFF = _read_expected(
    os.path.join(os.path.dirname(os.path.abspath(__file__)),
                 "expected_flags_off.toml"))

DIFF_KINDS = {
    "missing": "no record (the runner crashed or stopped)",
    "fork-raises": "upstream succeeds, the fork raises",
    "fork-succeeds": "upstream raises, the fork succeeds",
    "error-type": "both raise, the fork's type is not upstream's (or a "
                  "subclass)",
    "value": "values differ bitwise (or dtype, shape, leaf structure)",
    "placement": "a fork output is not where the rule (jit) or upstream's "
                 "eager mode (eager) puts it",
    "eager-rule": "eagerly the fork follows the rule where upstream's eager "
                  "mode does not",
}


def expected_reason(qualname, mode, how, kind, flags_off=False):
  for q, m, h, k, reason in (EXPECTED_FLAGS_OFF if flags_off else EXPECTED):
    if (re.fullmatch(q, qualname) and re.fullmatch(m, mode)
        and re.fullmatch(h, how) and re.fullmatch(k, kind)):
      return reason
  return None


def _leaf_key(leaf):
  if leaf["kind"] == "python":
    return ("python", leaf["repr"])
  return (leaf["kind"], leaf["dtype"], tuple(leaf["shape"]), leaf["bytes"])


def _describe_value_diff(f_leaves, u_leaves):
  if len(f_leaves) != len(u_leaves):
    return f"{len(f_leaves)} output leaves, upstream {len(u_leaves)}"
  for i, (a, b) in enumerate(zip(f_leaves, u_leaves)):
    if _leaf_key(a) == _leaf_key(b):
      continue
    if a["kind"] == "python" or b["kind"] == "python":
      return f"leaf {i}: {a.get('repr')!r} vs upstream {b.get('repr')!r}"
    if (a["dtype"], tuple(a["shape"])) != (b["dtype"], tuple(b["shape"])):
      return (f"leaf {i}: {a['dtype']}{list(a['shape'])} vs upstream "
              f"{b['dtype']}{list(b['shape'])}")
    x, y = to_numpy(a), to_numpy(b)
    n = int(np.sum(x.view(np.uint8).reshape(x.size, -1) !=
                   y.view(np.uint8).reshape(y.size, -1)).any(axis=-1).sum()) \
        if x.size else 0
    first = np.flatnonzero(
        (x.view(np.uint8).reshape(x.size, -1) !=
         y.view(np.uint8).reshape(y.size, -1)).any(axis=-1))[:1]
    at = (f"; first at flat index {first[0]}: {x.ravel()[first[0]]!r} vs "
          f"{y.ravel()[first[0]]!r}") if len(first) else ""
    return f"leaf {i} ({a['dtype']}{list(a['shape'])}): {n} elements differ{at}"
  return "differs"


def to_numpy(leaf):
  return np.frombuffer(leaf["bytes"], dtype=np.dtype(leaf["data_dtype"])) \
      .reshape(-1) if leaf["bytes"] else np.zeros(0, leaf["data_dtype"])


def placement_violations(rec, mode):
  """The fork's (or upstream's) departures from RULE in one ok record."""
  dev, committed = RULE[mode]
  out = []
  for i, leaf in enumerate(rec["leaves"]):
    if leaf["kind"] != "array":
      continue
    if leaf["devices"] != [dev] or leaf["committed"] != committed:
      out.append(f"leaf {i} on cpu:{leaf['devices']} committed="
                 f"{leaf['committed']}, rule: cpu:{dev} committed={committed}")
  return out


def check_run(qualname, mode, how, fork, upstream, flags_off=False):
  """The differences of one run: a list of (kind, description).

  With `flags_off`, upstream is the oracle for placement under jit too.
  """
  if fork is None or upstream is None:
    return [("missing", "fork" if fork is None else "upstream")]
  if not upstream["ok"]:
    ue = upstream["error"]
    if fork["ok"]:
      return [("fork-succeeds", f"upstream raises {ue['type']}: "
                                f"{ue['message'][:150]}")]
    if ue["type"] not in fork["error"]["mro"]:
      return [("error-type", f"{fork['error']['type']}: "
                             f"{fork['error']['message'][:150]} vs upstream "
                             f"{ue['type']}: {ue['message'][:150]}")]
    return []
  if not fork["ok"]:
    fe = fork["error"]
    return [("fork-raises", f"{fe['type']}: {fe['message'][:200]}")]
  diffs = []
  if [_leaf_key(l) for l in fork["leaves"]] != [
      _leaf_key(l) for l in upstream["leaves"]]:
    diffs.append(("value", _describe_value_diff(fork["leaves"],
                                                upstream["leaves"])))
  place = lambda r: [(l.get("devices"), l.get("committed"))
                     for l in r["leaves"]]
  v = placement_violations(fork, mode)
  if flags_off:
    if place(fork) != place(upstream):
      diffs.append(("placement", "; ".join(
          f"leaf {i} on cpu:{d} committed={c}, upstream cpu:{ud} "
          f"committed={uc}" for i, ((d, c), (ud, uc)) in enumerate(
              zip(place(fork), place(upstream))) if (d, c) != (ud, uc))))
  elif how == "eager":
    # Eager JAX is the oracle; a departure from it must follow the rule.
    if place(fork) != place(upstream):
      up = "; ".join(f"leaf {i} upstream on cpu:{d} committed={c}"
                     for i, (d, c) in enumerate(place(upstream))
                     if (d, c) != place(fork)[i])
      if v:
        diffs.append(("placement", "; ".join(v[:3]) + f" ({up})"))
      else:
        diffs.append(("eager-rule", f"the fork follows the rule; {up}"))
  elif v:
    same = " (as upstream)" if place(fork) == place(upstream) else (
        " (upstream places differently)")
    diffs.append(("placement", "; ".join(v[:3]) + same))
  return diffs


def close(eager, jit):
  """Whether the fork's eager and jit records agree to a loose tolerance."""
  if len(eager["leaves"]) != len(jit["leaves"]):
    return False
  for a, b in zip(eager["leaves"], jit["leaves"]):
    if a["kind"] == "python" or b["kind"] == "python":
      if a.get("repr") != b.get("repr"):
        return False
      continue
    if (a["dtype"], tuple(a["shape"])) != (b["dtype"], tuple(b["shape"])):
      return False
    x, y = to_numpy(a), to_numpy(b)
    if x.dtype.kind in "fc":
      if not np.allclose(x, y, rtol=1e-3, atol=1e-5, equal_nan=True):
        return False
    elif x.dtype.kind == "V" or not np.array_equal(x, y):
      if x.tobytes() != y.tobytes():
        return False
  return True


def compare(cases, fork_records, upstream_records, run_modes,
            flags_off=False):
  """Compares two runner outputs.

  Args:
    cases: the table's cases that ran, [(qualname, args, kwargs)].
    fork_records, upstream_records: {(qualname, mode, how): record}.
    run_modes: qualname, args, kwargs -> [(mode, how)].

  Returns:
    A dict: runs (list of (qualname, mode, how, [(kind, desc, reason)])),
    upstream_placement (list of (qualname, mode, how, desc, reason)),
    eager_jit (list of (qualname, mode, upstream_too)).
  """
  runs, up_place, eager_jit = [], [], []
  for q, args, kwargs in cases:
    for mode, how in run_modes(q, args, kwargs):
      f = fork_records.get((q, mode, how))
      u = upstream_records.get((q, mode, how))
      diffs = [(k, d, expected_reason(q, mode, how, k, flags_off))
               for k, d in check_run(q, mode, how, f, u, flags_off)]
      runs.append((q, mode, how, diffs))
      if u is not None and u["ok"]:
        v = placement_violations(u, mode)
        if v:
          up_place.append((q, mode, how, v[0], expected_reason(
              q, mode, how, "upstream-placement")))
    for mode in RULE:
      fe, fj = (fork_records.get((q, mode, h)) for h in ("eager", "jit"))
      if fe and fj and fe["ok"] and fj["ok"] and not close(fe, fj):
        ue, uj = (upstream_records.get((q, mode, h)) for h in ("eager", "jit"))
        eager_jit.append((q, mode, bool(ue and uj and ue["ok"] and uj["ok"]
                                        and not close(ue, uj))))
  return dict(runs=runs, upstream_placement=up_place, eager_jit=eager_jit)


def index(records):
  """{(qualname, mode, how): record} of a runner's record stream, plus the
  qualnames it started but did not finish (crashes)."""
  out, started, done = {}, [], False
  for r in records:
    if r[0] == "start":
      started.append(r[2])
    elif r[0] == "result":
      out[(r[2], r[3], r[4])] = r[5]
    elif r[0] == "done":
      done = True
  return out, started, done
