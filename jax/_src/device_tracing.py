# Device tracing: the committed device of staged values.
#
# Written for the device-tracing fork of JAX (jax-ml/jax#26000). Licensed under
# the Apache License, Version 2.0, like the JAX code it extends.
"""The committed device of traced values.

Every array value has an optional *committed device*: a ``jax.Device``, or
``None`` for an uncommitted value, which follows the computation. This is eager
JAX's ``committed`` notion carried into the abstract value:
``core.ShapedArray.device``.

When values meet in an operation, the result's device is the *join* of the
inputs' devices: ``None ⊔ d = d``, ``d ⊔ d = d``, and ``d1 ⊔ d2`` with
``d1 != d2`` is an error, raised while tracing.

A staged computation (one function being traced to a jaxpr) has a
:class:`Placement`: the devices its committed sources commit values to, where
each came from, and the reads of ``x.device`` of uncommitted values. Its
*home device* is where its uncommitted values go (the default device when
nothing committed it); ``tracer.device`` of an uncommitted value returns it.

Jaxprs record every committed source in the avals of their variables (jit
arguments, closed-over constants, the outputs of ``device_put`` and of creation
functions given ``device=``), so :func:`jaxpr_devices` can recover the devices of
a computation from the jaxpr alone, before dead-code elimination. Lowering uses
it to place the computation (``pxla.lower_sharding_computation``).

The home device, where a computation's uncommitted values go and which
``x.device`` of one returns, is a function of its committed sources alone
(:meth:`Placement.final_home`; docs/design.md, "The placement rule").
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

from jax._src import config
from jax._src import source_info_util
from jax._src.lib import xla_client as xc

Device = xc.Device


def device_str(d: Device) -> str:
  return f"{d.platform}:{d.id}"


def dev_ids_plat_str(d: Device) -> str:
  # The phrasing of stages.DeviceAssignmentMismatch, so that the errors read
  # the same as upstream JAX's device-mismatch errors.
  return f"with device ids [{d.id}] on platform {d.platform.upper()}"


def default_device() -> Device:
  """The device an uncommitted computation runs on."""
  from jax._src.interpreters import pxla  # pyrefly: ignore[missing-import]
  return pxla.get_default_device()


class DeviceConflictError(ValueError):
  """Values committed to different devices meet in one computation."""


def cross_device_enabled() -> bool:
  """Whether one computation may hold values on several devices.

  Not in the first step of the series: every computation is on one device.
  The second step (`jax_device_tracing_cross_device`) lets it hold several.
  """
  return False


class DeviceTracingUnavailable(AttributeError):
  """`x.device` has no single answer (for example, a multi-device value)."""


class RetraceOnDevice(BaseException):
  """Internal: trace the top-level computation again, on `device`.

  Raised when a committed source conflicts with a device that came from
  reading `x.device` of an uncommitted value before anything committed the
  computation. A BaseException, so that user code and JAX internals that
  catch Exception let it through to `pe.trace_to_jaxpr_nocache`.
  """

  def __init__(self, device):
    super().__init__(device)
    self.device = device


# --------------------------------------------------------------------------
# Where a committed device came from

@dataclasses.dataclass(frozen=True)
class Source:
  """Where a committed device entered a computation, for error messages."""
  device: Device
  what: str                 # "argument x of f", "jnp.zeros(...)", ...
  source_info: source_info_util.SourceInfo | None = None  # the user's line
  is_argument: bool = False

  @property
  def where(self) -> str | None:
    return user_summary(self.source_info)

  def describe(self) -> str:
    s = f"{self.what} {dev_ids_plat_str(self.device)}"
    if (where := self.where):
      s += f" (called at {where})" if self.is_argument else f" at {where}"
    return s


def user_summary(source_info) -> str | None:
  if source_info is None or source_info.traceback is None:
    return None
  s = source_info_util.summarize(source_info)
  return s if s and s != "unknown" else None


def _argument_what(debug_info, index: int, aval) -> str:
  arg_name = None
  fun_name = "the function"
  if debug_info is not None:
    fun_name = debug_info.func_name
    names = debug_info.arg_names
    if names is not None and index < len(names):
      arg_name = names[index]
  what = f"argument {arg_name or f'#{index}'} of {fun_name}"
  if aval is not None:
    what += f" with shape {aval.str_short()} and"
  return what


# --------------------------------------------------------------------------
# Errors

_HOW_TO_FIX = (
    "A jitted computation runs on one device: every committed value in it "
    "must be committed to that device. Move values with jax.device_put "
    "before they enter the computation, or leave them uncommitted.")


_HOW_TO_MOVE = (
    "Move one of them first with jax.device_put(x, device), or leave it "
    "uncommitted so that it follows the other.")


def conflict_error(first: Source | None, second: Source | None,
                   d1: Device, d2: Device, *, meet: str | None = None,
                   meet_where: str | None = None) -> DeviceConflictError:
  def desc(src, d):
    if src is None:
      return f"a value {dev_ids_plat_str(d)}"
    return src.describe()
  msg = (f"Received incompatible devices for jitted computation. Got "
         f"{desc(first, d1)} and {desc(second, d2)}.")
  if meet:
    msg += f" They meet in `{meet}`"
    msg += f" at {meet_where}." if meet_where else "."
  if meet and cross_device_enabled():
    msg += (f"\nValues committed to {device_str(d1)} and {device_str(d2)} "
            f"cannot meet in one operation, in jit as eagerly. {_HOW_TO_MOVE}")
  else:
    msg += (f"\nDevices {device_str(d1)} and {device_str(d2)} cannot both "
            f"hold values of one computation. {_HOW_TO_FIX}")
  return DeviceConflictError(msg)


# --------------------------------------------------------------------------
# Placement of one staged computation

class JitContext(NamedTuple):
  """What a jit call tells the computation it is about to stage."""
  device: Device | None = None   # jit-level committed device (device=, ...)
  what: str | None = None        # where it came from, for errors
  multi_device: bool = False     # the computation spans several devices
  meshes: tuple[Any, ...] = ()   # concrete meshes of its sharded arguments


class Placement:
  """Placement state of one function being staged to a jaxpr.

  It records every device that a committed source commits values of the
  computation to, and decides the *home device*: where the computation's
  uncommitted values go, and what `x.device` of an uncommitted value returns.
  The home device is a function of the computation's committed sources, never
  of the order in which they were traced (see :meth:`final_home`).

  A *strict* placement belongs to a computation compiled as one (a jit, or a
  jaxpr staged inside one): there a second committed device either makes the
  computation span devices (cross-device mode) or is an error. A placement of
  a jaxpr that eager autodiff evaluates op by op (a linearized tangent outside
  jit) is not strict, as eager values on two devices may meet there through
  device_put. Multi-device computations keep JAX's sharding semantics and are
  not strict either.
  """
  __slots__ = ("parent", "devices", "arg_device", "pinned", "hint",
               "ambient", "multi_device", "strict", "observed", "hinted",
               "read_device", "meshes", "call_site", "_active")

  parent: Placement | None
  devices: dict[Device, Source]  # every committed device, with its source
  arg_device: Device | None   # the device of the first committed argument
  pinned: Device | None       # jit-level device=: the only device allowed
  hint: Device | None         # a retrace: the home device, known in advance
  ambient: Device | None      # the enclosing computation's device, if known
  multi_device: bool
  strict: bool
  observed: list[tuple[Device, str | None]]  # `.device` reads, uncommitted
  hinted: bool                # in a retrace: reads are not traced again
  read_device: bool           # the trace read a device (note_read)
  call_site: source_info_util.SourceInfo     # where the function was called

  def __init__(self, parent: Placement | None, jit: JitContext | None):
    self.parent = parent
    self.devices = {}
    self.arg_device = None
    self.pinned = None
    self.hint = None
    # The enclosing computation's device, as the trace context says.
    self.ambient = config.device_tracing_ambient.value
    self.multi_device = ((parent is not None and parent.multi_device) or
                         (jit is not None and jit.multi_device))
    self.strict = parent is not None and parent.strict
    self.observed = []
    self.hinted = parent is not None and parent.hinted
    self.read_device = False
    # The concrete meshes that the computation's sharded arguments (or the
    # context mesh) lay values out on: `.device` of a sharded value.
    self.meshes = (parent.meshes if parent is not None else ()) + (
        jit.meshes if jit is not None else ())
    self.call_site = source_info_util.current()
    self._active = False
    if jit is not None and jit.device is not None:
      self.commit(jit.device, Source(jit.device, jit.what or "jit"))
      self.pinned = jit.device

  @property
  def is_top_level(self) -> bool:
    return self.parent is None

  def stage_whole(self):
    """Marks this placement as that of a computation compiled as one."""
    self.strict = not self.multi_device

  def final_home(self) -> Device | None:
    """The home device that the committed sources decide, or None.

    In order: a jit-level `device=`; else the device of the first committed
    argument (in argument order); else the one device that committed sources
    (constants, `device_put`, `device=`) commit values to. None when nothing
    is committed, or when sources inside the computation commit to several
    devices and no argument is committed: the computation's uncommitted
    values then go where they would go without it (the enclosing
    computation's device, else the default device), as eagerly.
    """
    if self.pinned is not None:
      return self.pinned
    if self.arg_device is not None:
      return self.arg_device
    if len(self.devices) == 1:
      return next(iter(self.devices))
    return None

  @property
  def estimate(self) -> Device | None:
    """The home device as far as known while tracing."""
    if self.hint is not None:
      return self.hint
    home = self.final_home()
    return self.ambient if home is None else home

  def commit(self, device: Device, source: Source | Callable[[], Source],
             is_argument: bool = False):
    """Records a committed source; raises if it conflicts with an earlier one."""
    devices = self.devices
    if device in devices:
      if is_argument and self.arg_device is None:
        self.arg_device = device
      return
    if devices and self.strict and (
        self.pinned is not None or not cross_device_enabled()):
      first, first_source = next(iter(devices.items()))
      if not self.hinted and self._observed(first):
        # The first device may have come from reading `x.device` before
        # this one decided the computation: trace again, knowing it.
        raise RetraceOnDevice(device)
      src = source() if callable(source) else source
      raise conflict_error(first_source, src, first, device)
    before = self.estimate
    devices[device] = source() if callable(source) else source
    if is_argument and self.arg_device is None:
      self.arg_device = device
    if self._active and self.estimate != before:
      config.device_tracing_ambient.set_local(self.estimate)

  def _observed(self, device: Device) -> bool:
    p: Placement | None = self
    while p is not None:
      if any(d == device for d, _ in p.observed):
        return True
      p = p.parent
    return False

  def hand_reads_to_parent(self):
    """Hands this computation's `.device` reads to the enclosing one."""
    if self.parent is not None:
      self.parent.observed.extend(self.observed)
    self.observed = []

  def set_hint(self, device: Device):
    """Makes this a retrace that knows the home device."""
    self.hint = device
    self.hinted = True

  def commit_jaxpr(self, jaxpr):
    """Commits the devices committed inside a jaxpr staged into this one."""
    devices = self.devices
    for d, src in jaxpr_devices(jaxpr):
      if d not in devices:
        self.commit(d, src)

  def user_line(self, source_info) -> str | None:
    """The user's line of an equation staged in this computation.

    Inside a jnp function (a nested jit), the line that called it.
    """
    p: Placement | None = self
    where = user_summary(source_info)
    while where is None and p is not None:
      where = user_summary(p.call_site)
      p = p.parent
    return where

  def source_for(self, device: Device) -> Source | None:
    """Where `device` entered the computation, as the user wrote it.

    An argument of a nested jit is described by what the enclosing
    computation passed to it, where that committed it.
    """
    src = self.devices.get(device)
    if (src is None or src.is_argument) and self.parent is not None:
      return self.parent.source_for(device) or src
    return src

  def observe(self, what: str) -> Device:
    """The home device, for `.device` of an uncommitted value."""
    if self.multi_device:
      raise DeviceTracingUnavailable(
          f"The 'device' attribute is not available on {what}: the "
          "computation spans several devices (its inputs or shardings are "
          "multi-device), so an uncommitted value has no single device. Use "
          "`jax.typeof(x).sharding`, or commit the value with "
          "jax.device_put(x, device).")
    d = self.estimate
    if d is None:
      d = default_device()
    if self.hint is None and (self.pinned is not None or
                              self.arg_device is not None):
      return d  # decided by jit device= or an argument: final
    self.observed.append((d, user_summary(source_info_util.current())))
    return d

  def stale_observation(self) -> tuple[Device, tuple[Device, str | None]
                                       ] | None:
    """A `.device` read that the final home device contradicts.

    Called when the function is staged. Reads are checked by the innermost
    computation that decides its own home device: a nested one whose
    sources decide none hands its reads to the enclosing computation, where
    its uncommitted values go. Returns the final home device and the read,
    or None.
    """
    want = self.final_home()
    if want is None:
      if self.parent is not None:
        self.hand_reads_to_parent()
        return None
      want = self.ambient if self.ambient is not None else default_device()
    for d, where in self.observed:
      if d != want:
        return want, (d, where)
    return None


class _State(threading.local):
  def __init__(self):
    self.stack: list[Placement] = []
    self.jit: JitContext | None = None


_state = state = _State()  # `state.stack` is non-empty while staging


def current() -> Placement | None:
  stack = _state.stack
  return stack[-1] if stack else None


def tracer_device(tracer) -> Device:
  """`tracer.device`: its committed device, else the computation device."""
  note_read()
  aval = tracer.aval
  d = aval.device
  if d is not None:
    return d
  mesh = aval.sharding.mesh
  if not mesh.empty and mesh.size != 1:
    return _sharded_device(tracer, aval)
  p = current()
  if p is None:
    return default_device()
  return p.observe(tracer._error_repr())


def _sharded_device(tracer, aval):
  """`.device` of a value sharded over several devices: its sharding.

  As eagerly (a NamedSharding over the concrete mesh, with the value's spec
  and memory kind), where the sharding is known while tracing: the mesh's
  axes are Explicit, and its devices are those of the context mesh or of a
  sharded argument of the computation.
  """
  from jax._src import core  # pyrefly: ignore[missing-import]
  from jax._src import mesh as mesh_lib  # pyrefly: ignore[missing-import]
  from jax._src.named_sharding import NamedSharding  # pyrefly: ignore[missing-import]
  abstract = aval.sharding.mesh
  what = tracer._error_repr()
  if not abstract.are_all_axes_explicit:
    raise DeviceTracingUnavailable(
        f"The 'device' attribute is not available on {what}, which is "
        f"sharded over a mesh of {abstract.size} devices with Auto axes: "
        "the compiler decides its layout, so it is not known while tracing. "
        "Use a mesh with Explicit axes (jax.make_mesh(..., axis_types=...)), "
        "pass the sharding itself (device=NamedSharding(mesh, spec)), or "
        "read `jax.typeof(x).sharding`.")
  concrete = mesh_lib.get_concrete_mesh()
  if concrete.empty or concrete.abstract_mesh != abstract:
    p = current()
    meshes = () if p is None else p.meshes
    concrete = next((m for m in meshes if m.abstract_mesh == abstract), None)
  if concrete is None:
    raise DeviceTracingUnavailable(
        f"The 'device' attribute is not available on {what}: it is sharded "
        f"over the abstract mesh {abstract}, and no devices are known for it "
        "while tracing. Enter the concrete mesh with jax.set_mesh(mesh), or "
        "read `jax.typeof(x).sharding`.")
  return NamedSharding(concrete, aval.sharding.spec,
                       memory_kind=core.mem_space_to_kind(aval.memory_space))


# --------------------------------------------------------------------------
# The device of a jaxpr

class JaxprDevice(NamedTuple):
  device: Device
  source: Source


def _eqn_source(eqn, device) -> Source:
  return Source(device, f"`{eqn.primitive.name}`", eqn.source_info)


def _jaxpr_devices(jaxpr) -> tuple[JaxprDevice, ...]:
  from jax._src import core  # pyrefly: ignore[missing-import]
  found: dict[Device, Source] = {}
  num_consts = len(jaxpr.consts)
  for i, v in enumerate(jaxpr.all_invars):
    d = getattr(v.aval, "device", None)
    if d is not None and d not in found:
      found[d] = (Source(d, f"closed-over constant {v.aval.str_short()}")
                  if i < num_consts else
                  Source(d, _argument_what(jaxpr.debug_info, i - num_consts,
                                           v.aval), is_argument=True))
  Literal, Jaxpr = core.Literal, core.Jaxpr
  for eqn in jaxpr.eqns:
    for v in eqn.invars:
      if type(v) is Literal:
        d = getattr(v.aval, "device", None)
        if d is not None and d not in found:
          found[d] = Source(d, f"closed-over constant {v.aval.str_short()}")
    for v in eqn.outvars:
      d = getattr(v.aval, "device", None)
      if d is not None and d not in found:
        found[d] = _eqn_source(eqn, d)
    for val in eqn.params.values():   # core.jaxprs_in_params, inlined
      if type(val) is Jaxpr or type(val) is tuple:
        for sub in (val if type(val) is tuple else (val,)):
          if isinstance(sub, Jaxpr):
            for d, src in jaxpr_devices(sub):
              found.setdefault(d, src)
  return tuple(JaxprDevice(d, src) for d, src in found.items())


# jaxpr -> (its devices, its home device), as its trace recorded them or a
# scan of the jaxpr found them. Jaxprs hash by identity.
_jaxpr_devices_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _cache_jaxpr_devices(jaxpr, devices, home):
  _jaxpr_devices_cache[jaxpr] = (devices, home)


def _home_of(jaxpr, devices: tuple[JaxprDevice, ...]) -> Device | None:
  # Placement.final_home, for a jaxpr that no trace recorded (one made by a
  # transformation): its first committed argument, else its one device.
  for v in jaxpr.invars:
    d = getattr(v.aval, "device", None)
    if d is not None:
      return d
  return devices[0].device if len(devices) == 1 else None


def _lookup(jaxpr) -> tuple[tuple[JaxprDevice, ...], Device | None]:
  entry = _jaxpr_devices_cache.get(jaxpr)
  if entry is not None:
    return entry
  devices = _jaxpr_devices(jaxpr)
  home = _home_of(jaxpr, devices)
  _cache_jaxpr_devices(jaxpr, devices, home)
  return devices, home


def jaxpr_devices(jaxpr) -> tuple[JaxprDevice, ...]:
  """Every committed device of a jaxpr, before any DCE.

  Each with its first source (nested jaxprs included). A jaxpr that traced
  without error has at most one, unless cross-device computations are
  enabled.
  """
  return _lookup(jaxpr)[0]


def note_read():
  """Notes that the computations being staged observed a device."""
  p = current()
  while p is not None and not p.read_device:
    p.read_device = True
    p = p.parent
