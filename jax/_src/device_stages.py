# Device tracing: computations that span several devices, run as stages.
#
# Written for the device-tracing fork of JAX (jax-ml/jax#26000). Licensed under
# the Apache License, Version 2.0, like the JAX code it extends.
"""Jitted computations whose values are committed to several devices.

Eager JAX runs a program whose values live on several devices: an operation
runs where its operands are committed (they must agree), and
``jax.device_put`` moves a value. One XLA computation runs on one device, so
with device tracing a jitted computation that does the same is split:

1. *Placement.* Every equation of the jaxpr gets a device: the join of the
   devices of its operands, results and sub-jaxprs (committed values are hard
   constraints). An equation of uncommitted values only (a constant, iota, a
   function of uncommitted arguments) runs where all its consumers run, or on
   the computation's home device when they disagree or it has none. A
   ``device_put`` of a value committed to one device onto another is a
   *transfer*. A nested jit that spans several devices is inlined first.
2. *Stages.* Equations are grouped into per-device stages by level: an
   equation's level is first the number of cross-device edges on the longest
   path that reaches it, then as late as its consumers allow (pure equations
   only), so that a device's work gathers in few stages. A stage depends only
   on stages of lower levels and on its own device's earlier equations. Each
   stage is an ordinary jitted function pinned to its device (the C++
   dispatch path calls it).
3. *Execution.* Levels run in order: the stages of a level, then the
   transfers out of it. Transfers are explicit ``device_put``s; a value
   computed on one device and needed on another (an uncommitted value whose
   consumers disagree) is copied as jit copies an uncommitted argument. Every
   result lands committed on its device: a committed result where it is
   committed, an uncommitted one on the home device.

The home device is the one of ``device_tracing.Placement.final_home`` (the
first committed argument's device, else the one device that sources inside
commit to, else the default device): it is what ``x.device`` of an
uncommitted value returned while tracing.

Single-device computations never come here: they compile to one executable
and keep the C++ dispatch path.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from typing import Any

from jax._src import config
from jax._src import core
from jax._src import device_tracing
from jax._src import dispatch
from jax._src import source_info_util
from jax._src.lib import xla_client as xc
from jax._src.sharding import Sharding
from jax._src.sharding_impls import SingleDeviceSharding, UnspecifiedValue
from jax._src.util import weakref_lru_cache

Device = xc.Device
_REUSE = xc.ArrayCopySemantics.REUSE_INPUT


class CrossDeviceError(device_tracing.DeviceConflictError):
  """A computation spanning several devices that cannot run as stages."""


# --------------------------------------------------------------------------
# Tracing: what a computation that spans devices may not do

def check_one_device(primitive, in_device: Device | None, jaxprs,
                     source_info) -> None:
  """The bodies of an operation that is not a call stay on one device.

  A loop body or a cond branch (`jaxprs`, from the operation's params) runs
  as one computation of its own, eagerly too: it may not move values
  between devices. Calls (jit, checkpoint, custom_jvp, custom_vjp) may.
  """
  if device_tracing.is_call_spanning_devices(primitive):
    return
  first: tuple[Device, device_tracing.Source | None] | None = (
      None if in_device is None else (in_device, None))
  for jaxpr in jaxprs:
    for d, src in device_tracing.jaxpr_devices(jaxpr):
      if first is None:
        first = (d, src)
      elif d != first[0]:
        raise cross_device_body_error(primitive, first, (d, src), source_info)


def cross_device_body_error(primitive, first, second, source_info
                            ) -> CrossDeviceError:
  def desc(d, src):
    return (src.describe() if src is not None
            else f"its operands {device_tracing.dev_ids_plat_str(d)}")
  where = device_tracing.user_summary(source_info)
  d1, d2 = (device_tracing.device_str(first[0]),
            device_tracing.device_str(second[0]))
  msg = (f"`{primitive.name}`{f' at {where}' if where else ''} holds values "
         f"committed to {d1} and {d2}: {desc(*first)}, and "
         f"{desc(*second)}.\nA jitted computation may span several devices, "
         "but a loop body and the branches of a cond must each stay on one "
         "device. Move values between devices before or after it.")
  return CrossDeviceError(msg)


def no_single_computation_error(
    devices: Sequence[device_tracing.JaxprDevice]) -> CrossDeviceError:
  """For lowering a computation that spans several devices as one."""
  listed = "; ".join(src.describe() for _, src in devices)
  return CrossDeviceError(
      "This computation holds values committed to several devices "
      f"({listed}). Called, it runs as per-device stages with copies between "
      "them; it has no single XLA computation, so it cannot be lowered, "
      "compiled ahead of time or exported as one. Lower each per-device part "
      "as a jit of its own, or commit its values to one device.")


def spans_devices(jaxpr: core.Jaxpr) -> bool:
  """Whether `jaxpr` holds values committed to more than one device."""
  return len(device_tracing.jaxpr_devices(jaxpr)) > 1


# --------------------------------------------------------------------------
# Flattening: nested jits that span several devices are inlined.

def _spanning_callee(eqn: core.JaxprEqn) -> core.Jaxpr | None:
  """The callee of a call to inline: one that spans several devices.

  A jit call with shardings of its own is not inlined (it runs as one call).
  """
  callee = device_tracing.spanning_callee(eqn.primitive, eqn.params)
  if callee is None or not spans_devices(callee):
    return None
  p = eqn.params
  if not all(type(s) is UnspecifiedValue
             for s in (*p.get("in_shardings", ()),
                       *p.get("out_shardings", ()))):
    return None
  return callee


def _flatten(jaxpr: core.Jaxpr):
  """The equations of `jaxpr` with spanning jit calls inlined.

  Returns (constvars, consts, eqns, outvars, home): constvars and consts
  include those of inlined callees; `home` maps the variables that an inlined
  callee returns uncommitted to the device its call committed them to.
  """
  constvars = list(jaxpr.constvars)
  consts = list(jaxpr.consts)
  eqns: list[core.JaxprEqn] = []
  home: dict[core.Var, Device] = {}

  def read(subst, a):
    return subst.get(a, a) if isinstance(a, core.Var) else a

  def walk(j: core.Jaxpr, subst: dict):
    for eqn in j.eqns:
      invars = [read(subst, a) for a in eqn.invars]
      callee = _spanning_callee(eqn)
      if callee is None:
        if any(a is not b for a, b in zip(invars, eqn.invars)):
          eqn = eqn.replace(invars=invars)
        eqns.append(eqn)
        continue
      inner: dict = {}
      for v, c in zip(callee.constvars, callee.consts):
        nv = core.Var(v.aval)
        constvars.append(nv)
        consts.append(c)
        inner[v] = nv
      inner.update(zip(callee.invars, invars))
      walk(callee, inner)
      for outer, a in zip(eqn.outvars, callee.outvars):
        a = read(inner, a)
        subst[outer] = a
        d = outer.aval.device if isinstance(outer.aval, core.ShapedArray) else None
        if (isinstance(a, core.Var) and d is not None and
            getattr(a.aval, "device", None) is None):
          home.setdefault(a, d)

  top: dict = {}
  walk(jaxpr, top)
  outvars = [read(top, a) for a in jaxpr.outvars]
  return constvars, consts, eqns, outvars, home


# --------------------------------------------------------------------------
# Placement

def _aval_device(aval) -> Device | None:
  return aval.device if isinstance(aval, core.ShapedArray) else None


def _is_transfer(eqn: core.JaxprEqn, device_of) -> bool:
  """A device_put moving a committed value onto another device."""
  if eqn.primitive is not dispatch.device_put_p:
    return False
  for a, out in zip(eqn.invars, eqn.outvars):
    src, dst = device_of(a), _aval_device(out.aval)
    if src is not None and dst is not None and src != dst:
      return True
  return False


def _eqn_device(eqn: core.JaxprEqn, device_of) -> Device | None:
  """The join of an equation's operands, results and sub-jaxprs."""
  devices = [device_of(a) for a in eqn.invars]
  devices += [_aval_device(v.aval) for v in eqn.outvars]
  for j in core.jaxprs_in_params(eqn.params):
    devices += [d for d, _ in device_tracing.jaxpr_devices(j)]
  try:
    return device_tracing.join_devices(devices)
  except device_tracing.JoinConflict as e:
    where = source_info_util.summarize(eqn.source_info)
    raise CrossDeviceError(
        f"`{eqn.primitive.name}` at {where} holds values committed to "
        f"{device_tracing.device_str(e.d1)} and "
        f"{device_tracing.device_str(e.d2)}, so it cannot run on one device "
        "of a computation split into per-device stages.") from None


@dataclasses.dataclass
class _Stage:
  device: Device
  level: int
  eqns: list[core.JaxprEqn] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Transfer:
  eqn: core.JaxprEqn
  level: int


def _place(eqns, invars, outvars, home_of, home: Device):
  """Assigns each equation a device and a level; returns stages, transfers.

  `home_of(v)` is the device a variable is committed to (None: uncommitted).
  """
  device_of = lambda a: home_of(a) if isinstance(a, core.Var) else None
  transfer = [_is_transfer(e, device_of) for e in eqns]
  device: list[Device | None] = [
      None if t else _eqn_device(e, device_of) for e, t in zip(eqns, transfer)]

  # Uncommitted equations run where their consumers run (backwards).
  consumers: dict[core.Var, set] = {}
  for a in outvars:
    if isinstance(a, core.Var):
      consumers.setdefault(a, set()).add(home_of(a) or home)
  for i in reversed(range(len(eqns))):
    e = eqns[i]
    if transfer[i]:
      for a, out in zip(e.invars, e.outvars):
        if isinstance(a, core.Var):
          consumers.setdefault(a, set()).add(_aval_device(out.aval) or home)
      continue
    if device[i] is None:
      ds = set().union(*(consumers.get(v, ()) for v in e.outvars))
      device[i] = ds.pop() if len(ds) == 1 else home
    for a in e.invars:
      if isinstance(a, core.Var):
        consumers.setdefault(a, set()).add(device[i])

  # Levels, as early as possible: crossing to another device adds one.
  where: dict[core.Var, tuple[Device | None, int]] = {
      v: (home_of(v), 0) for v in invars}
  level = [0] * len(eqns)
  for i, e in enumerate(eqns):
    ins = [where[a] for a in e.invars if isinstance(a, core.Var)]
    if transfer[i]:
      level[i] = max((lvl for _, lvl in ins), default=0)
      for a, out in zip(e.invars, e.outvars):
        dst = _aval_device(out.aval) or device_of(a)
        where[out] = (dst, level[i] + 1)
      continue
    d = device[i]
    level[i] = max((lvl + (dv is not None and dv != d) for dv, lvl in ins),
                   default=0)
    for v in e.outvars:
      where[v] = (d, level[i])

  # Then as late as their consumers allow, so that a device's equations
  # gather in as few stages as possible; effectful ones stay in order.
  last = {}
  for i in range(len(eqns)):
    if not transfer[i]:
      last[device[i]] = max(last.get(device[i], 0), level[i])
  needed_by: dict[core.Var, int] = {}   # the latest level a value may have
  for a in outvars:
    if isinstance(a, core.Var):
      needed_by[a] = last.get(where.get(a, (None,))[0], 0)
  for i in reversed(range(len(eqns))):
    e = eqns[i]
    if not transfer[i] and not e.effects:
      latest = min((needed_by[v] for v in e.outvars if v in needed_by),
                   default=last[device[i]])
      level[i] = max(level[i], latest)
    for a in e.invars:
      if isinstance(a, core.Var):
        cross = transfer[i] or where[a][0] not in (None, device[i])
        lvl = level[i] - (cross and not transfer[i])
        needed_by[a] = min(needed_by.get(a, lvl), lvl)

  stages: dict[tuple[int, Device], _Stage] = {}
  transfers: list[_Transfer] = []
  for i, e in enumerate(eqns):
    if transfer[i]:
      transfers.append(_Transfer(e, level[i]))
      continue
    d = device[i]
    stage = stages.get((level[i], d))
    if stage is None:
      stage = stages[(level[i], d)] = _Stage(d, level[i])
    stage.eqns.append(e)
  return list(stages.values()), transfers


# --------------------------------------------------------------------------
# The program: stages and transfers, run in order

@dataclasses.dataclass(frozen=True)
class _Step:
  fn: Callable[..., Sequence[Any]]
  ins: tuple[int, ...]        # slots read
  outs: tuple[int, ...]       # slots written
  is_stage: bool              # a stage, else a transfer or a copy


def _copier(device: Device) -> Callable[[Any], Any]:
  """Copies one value to `device`, committing it there."""
  sharding = SingleDeviceSharding(device)
  device_list = sharding._internal_device_list
  def copy(x):
    if (type(x) is xc.ArrayImpl and x._committed and
        type(x.sharding) is SingleDeviceSharding):
      # A committed single-device array: one copy, as device_put makes it.
      y, = xc.batched_copy_array_to_devices_with_sharding(
          [x], [device_list], [sharding], [_REUSE])
      return y
    y, = dispatch.device_put_p.bind(
        x, devices=(device,), srcs=(None,), copy_semantics=(_REUSE,))
    return y
  return copy


def _explicit_transfer(eqn: core.JaxprEqn) -> Callable[..., Sequence[Any]]:
  params = eqn.params
  devices = params["devices"]
  if (all(isinstance(d, Device) for d in devices) and
      all(s is None for s in params["srcs"]) and
      all(c == _REUSE for c in params["copy_semantics"])):
    copies = [_copier(d) for d in devices]
    def transfer(*xs):
      with config.explicit_device_put_scope():
        return [c(x) for c, x in zip(copies, xs)]
  else:
    def transfer(*xs):
      with config.explicit_device_put_scope():
        return dispatch.device_put_p.bind(*xs, **params)
  return transfer


def _implicit_copy(device: Device) -> Callable[..., Sequence[Any]]:
  # As jit moves an uncommitted argument: an implicit transfer.
  copy = _copier(device)
  return lambda x: [copy(x)]


def _stage_function(jaxpr: core.Jaxpr, device: Device, name: str):
  from jax._src import api  # pyrefly: ignore[missing-import]
  def stage(*args):
    return core.eval_jaxpr(jaxpr, (), *args)
  stage.__name__ = stage.__qualname__ = name
  return api.jit(stage, out_shardings=SingleDeviceSharding(device))


class StagedComputation:
  """A jitted computation split into per-device stages."""

  def __init__(self, jaxpr: core.Jaxpr, name: str):
    home = device_tracing.jaxpr_home(jaxpr)
    # No committed argument, and sources on several devices: uncommitted
    # values go where they would go eagerly.
    self.home = home if home is not None else device_tracing.default_device()
    constvars, consts, eqns, outvars, home_of_inlined = _flatten(jaxpr)
    invars = [*constvars, *jaxpr.invars]

    def home_of(v):
      return _aval_device(v.aval) or home_of_inlined.get(v)

    stages, transfers = _place(eqns, invars, outvars, home_of, self.home)

    # Which variables each stage, transfer and the result reads.
    slot: dict[core.Var, int] = {v: i for i, v in enumerate(invars)}
    def slot_of(v):
      if v not in slot:
        slot[v] = len(slot)
      return slot[v]

    def reads(es):
      defined = {v for e in es for v in e.outvars}
      seen, out = set(), []
      for e in es:
        for a in e.invars:
          if isinstance(a, core.Var) and a not in defined and a not in seen:
            seen.add(a)
            out.append(a)
      return out

    # Results each value must land on: where it is committed, else home.
    result_device = [home_of(a) or self.home if isinstance(a, core.Var)
                     else self.home for a in outvars]

    used_later: set[core.Var] = {a for a in outvars if isinstance(a, core.Var)}
    for t in transfers:
      used_later.update(a for a in t.eqn.invars if isinstance(a, core.Var))
    stage_inputs = {id(s): reads(s.eqns) for s in stages}
    for ins in stage_inputs.values():
      used_later.update(ins)

    steps: list[_Step] = []
    order = sorted(itertools.chain(
        ((s.level, 0, s.device.id, s) for s in stages),
        ((t.level, 1, i, t) for i, t in enumerate(transfers))),
        key=lambda x: x[:3])
    # Where each value is once computed (None: an uncommitted argument, which
    # a stage's jit moves where it needs it).
    located: dict[core.Var, Device | None] = {v: home_of(v) for v in invars}
    for k, (_, _, _, item) in enumerate(order):
      if isinstance(item, _Transfer):
        e = item.eqn
        steps.append(_Step(
            _explicit_transfer(e),
            tuple(slot_of(a) for a in e.invars),
            tuple(slot_of(v) for v in e.outvars), False))
        for a, v in zip(e.invars, e.outvars):
          located[v] = _aval_device(v.aval) or located.get(a)
        continue
      s = item
      ins = stage_inputs[id(s)]
      for i, a in enumerate(ins):
        if located.get(a) is not None and located[a] != s.device:
          # An uncommitted value computed on another device.
          copy = core.Var(a.aval)
          steps.append(_Step(_implicit_copy(s.device), (slot_of(a),),
                             (slot_of(copy),), False))
          located[copy] = s.device
          ins[i] = copy
          s.eqns = [e.replace(invars=[copy if b is a else b
                                      for b in e.invars]) for e in s.eqns]
      outs = [v for e in s.eqns for v in e.outvars
              if v in used_later and not isinstance(v, core.DropVar)]
      stage_jaxpr = core.Jaxpr(
          constvars=(), invars=ins, outvars=outs, eqns=s.eqns,
          effects=core.join_effects(*(e.effects for e in s.eqns)),
          debug_info=core.DebugInfo(
              "jit", f"{name} stage {k} on {device_tracing.device_str(s.device)}",
              None, None))
      steps.append(_Step(
          _stage_function(stage_jaxpr, s.device, f"{name}_stage{k}"),
          tuple(slot_of(a) for a in ins), tuple(slot_of(v) for v in outs),
          True))
      for v in outs:
        located[v] = s.device

    # Results that are not yet committed where they must land: literals,
    # uncommitted arguments returned as they are, values copied home.
    results = []
    for a, d in zip(outvars, result_device):
      if isinstance(a, core.Literal):
        results.append(("literal", a.val, _copier(d)))
      elif located.get(a) == d:
        results.append(("slot", slot_of(a), None))
      else:
        results.append(("slot", slot_of(a), _copier(d)))
    self._num_slots = len(slot)
    self._num_in = len(invars)
    self._consts = consts
    self._steps = steps
    self._results = results
    self.num_stages = sum(s.is_stage for s in steps)
    self.num_transfers = len(steps) - self.num_stages

  def __call__(self, *args):
    env: list[Any] = [None] * self._num_slots
    env[:self._num_in] = [*self._consts, *args]
    for step in self._steps:
      outs = step.fn(*[env[i] for i in step.ins])
      for i, o in zip(step.outs, outs):
        env[i] = o
    out = []
    for kind, v, copy in self._results:
      x = env[v] if kind == "slot" else v
      out.append(x if copy is None else copy(x))
    return out


@weakref_lru_cache
def _staged_computation(jaxpr: core.Jaxpr, name: str) -> StagedComputation:
  return StagedComputation(jaxpr, name)


def staged_call(jaxpr: core.Jaxpr, args, in_shardings, out_shardings,
                ctx_mesh, name: str) -> Callable[..., list[Any]] | None:
  """The staged computation for a jit call of `jaxpr`, if it spans devices.

  None for a computation on one device (or none): it compiles as one. A
  computation under a mesh, or with arguments sharded over several devices,
  keeps JAX's sharding semantics.
  """
  if not spans_devices(jaxpr) or not ctx_mesh.empty:
    return None
  if any(isinstance(s := getattr(a, "sharding", None), Sharding) and
         s.num_devices > 1 for a in args):
    return None
  for s in (*in_shardings, *out_shardings):
    if (type(s) is not UnspecifiedValue and
        device_tracing.sharding_device(s) is None):
      devices = ", ".join(device_tracing.device_str(d)
                          for d, _ in device_tracing.jaxpr_devices(jaxpr))
      raise CrossDeviceError(
          f"jit of {name} spans the devices {devices}, and has the sharding "
          f"{s}: a computation split into per-device stages takes only "
          "single-device in_shardings and out_shardings.")
  if any(type(s) is not UnspecifiedValue for s in (*in_shardings,
                                                    *out_shardings)):
    return _with_shardings(jaxpr, name, tuple(in_shardings),
                           tuple(out_shardings))
  return _staged_computation(jaxpr, name)


@weakref_lru_cache
def _with_shardings(jaxpr, name, in_shardings, out_shardings):
  # As jit moves arguments to its in_shardings, and results to its
  # out_shardings.
  staged = _staged_computation(jaxpr, name)
  def copiers(shardings):
    return [None if type(s) is UnspecifiedValue
            else _copier(device_tracing.sharding_device(s)) for s in shardings]
  in_copies, out_copies = copiers(in_shardings), copiers(out_shardings)
  def call(*args):
    outs = staged(*[x if c is None else c(x) for x, c in zip(args, in_copies)])
    return [x if c is None else c(x) for x, c in zip(outs, out_copies)]
  return call
