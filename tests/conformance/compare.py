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

The program families (spec.FAMILY, conformance/families) are checked
against eager mode instead: eagerly a program is checked against upstream's
eager run as above; under jit and through the AOT stages it must do what the
fork does eagerly (the same values bitwise, errors and devices; a result
uncommitted eagerly may be committed, docs/design.md: the outputs of a
committed computation are committed). The AOT stages must agree with each
other and with the call (kind "aot"), and a donated argument must be deleted
where upstream's jit deletes it (kind "donation"). With the flags off, every
run of a program is checked against upstream's, as every other run is.
"""

import os
import re
import tomllib

import numpy as np

from conformance import spec  # pylint: disable=g-import-not-at-top

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
    "aot": "the AOT stages' out shardings disagree with each other or with "
           "the call (with the flags off: with upstream's)",
    "donation": "a donated argument is deleted where upstream's jit keeps it, "
                "or kept where it deletes it",
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


def _check_errors(fork, oracle, name):
  """Errors of a run against its oracle's: (differences, both succeeded).

  If the oracle raises, the fork raises the same type or a subclass; if the
  oracle succeeds, so does the fork.
  """
  if not oracle["ok"]:
    oe = oracle["error"]
    if fork["ok"]:
      return [("fork-succeeds", f"{name} raises {oe['type']}: "
                                f"{oe['message'][:150]}")], False
    if oe["type"] not in fork["error"]["mro"]:
      return [("error-type", f"{fork['error']['type']}: "
                             f"{fork['error']['message'][:150]} vs {name} "
                             f"{oe['type']}: {oe['message'][:150]}")], False
    return [], False
  if not fork["ok"]:
    fe = fork["error"]
    return [("fork-raises", f"{fe['type']}: {fe['message'][:200]}")], False
  return [], True


def _value_diffs(fork, oracle, note=""):
  """A "value" difference if any leaf differs bitwise from the oracle's."""
  if [_leaf_key(l) for l in fork["leaves"]] == [
      _leaf_key(l) for l in oracle["leaves"]]:
    return []
  return [("value", _describe_value_diff(fork["leaves"], oracle["leaves"])
           + note)]


def _check_program(fork, eager, mode):
  """A program's run under jit or AOT against the fork's eager run."""
  mode_device = RULE[mode][0]
  if eager is None:
    return [("missing", "fork eager")]
  diffs, both_ok = _check_errors(fork, eager, "eager mode")
  if not both_ok:
    return diffs
  diffs += _value_diffs(fork, eager, " (eager)")
  # A value committed eagerly is where it is eagerly. One uncommitted
  # eagerly lands committed on the computation's home device (the rule's
  # departures, docs/design.md): the mode's device (a committed argument's),
  # or the one device that the committed values inside commit to.
  committed_eagerly = {tuple(b["devices"]) for b in eager["leaves"]
                       if b.get("committed")}
  homes = {(mode_device,)}
  if len(committed_eagerly) == 1:
    homes |= committed_eagerly
  def placed(a, b):
    if a.get("devices") == b.get("devices"):
      return a.get("committed", False) >= b.get("committed", False)
    return (not b.get("committed") and a.get("committed") and
            tuple(a["devices"]) in homes)
  misplaced = [
      f"leaf {i} on cpu:{a.get('devices')} committed={a.get('committed')}, "
      f"eagerly cpu:{b.get('devices')} committed={b.get('committed')}"
      for i, (a, b) in enumerate(zip(fork["leaves"], eager["leaves"]))
      if not placed(a, b)]
  if misplaced:
    diffs.append(("placement", "; ".join(misplaced[:3])))
  return diffs


def _check_aot(fork, upstream, flags_off):
  """The AOT stages' out shardings of one run."""
  aot = fork.get("aot") if fork["ok"] else None
  if aot is None:
    return []
  if flags_off:
    up = upstream.get("aot") if upstream["ok"] else None
    return [] if aot == up else [("aot", f"{aot} vs upstream {up}")]
  # Traced and Lowered name no sharding for an output that the computation
  # does not commit (as upstream); any they name is the call's, as is every
  # one Compiled names.
  call = aot["call"]
  wrong = [f"{k}: {aot[k]}" for k in ("traced", "lowered")
           if aot[k] != aot["traced"] or
           any(s not in ("None", c) for s, c in zip(aot[k], call))]
  if aot["compiled"] != call:
    wrong.append(f"compiled: {aot['compiled']}")
  return [("aot", "; ".join(wrong) + f"; the call: {aot['call']}")
          ] if wrong else []


def _check_donation(fork, upstream):
  deleted = fork.get("deleted") if fork["ok"] else None
  up = upstream.get("deleted") if upstream["ok"] else None
  if deleted is None or up is None or deleted == up:
    return []
  return [("donation", f"inputs deleted: {deleted}, upstream's jit: {up}")]


def check_run(qualname, mode, how, fork, upstream, flags_off=False,
              fork_eager=None):
  """The differences of one run: a list of (kind, description).

  With `flags_off`, upstream is the oracle for placement under jit too. A
  program of a family is checked under jit and AOT against `fork_eager`, the
  fork's eager run of the same mode.
  """
  if fork is None or upstream is None:
    return [("missing", "fork" if fork is None else "upstream")]
  if qualname.startswith(spec.FAMILY) and how != "eager":
    diffs = _check_aot(fork, upstream, flags_off)
    diffs += _check_donation(fork, upstream)
    if not flags_off:
      return _check_program(fork, fork_eager, mode) + diffs
    return _check_upstream(mode, how, fork, upstream, flags_off) + diffs
  return _check_upstream(mode, how, fork, upstream, flags_off)


def _check_upstream(mode, how, fork, upstream, flags_off):
  """One run against upstream's same run."""
  diffs, both_ok = _check_errors(fork, upstream, "upstream")
  if not both_ok:
    return diffs
  diffs += _value_diffs(fork, upstream)
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
      fe = fork_records.get((q, mode, "eager"))
      diffs = [(k, d, expected_reason(q, mode, how, k, flags_off))
               for k, d in check_run(q, mode, how, f, u, flags_off, fe)]
      runs.append((q, mode, how, diffs))
      if u is not None and u["ok"] and not q.startswith(spec.FAMILY):
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
