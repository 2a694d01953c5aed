"""Thresholds per machine class: the host's core speed and CPU pick the file whose floors hold here.

Runners of one CI pool are one machine class; between pools the same SUT forwards at very
different rates. The embedded testbed's VMs have come in two classes: cores at 28-34 M it/s
of dpgate's probe loop (``dpgate.exec.speedprobe``) and at 48-63 M it/s, where every NDR is
far above the slower class's floors (a 30 % regression passes them). CSIT keeps thresholds per
testbed type; dpgate picks them by measured speed. The base file (``variables/embedded.yaml``)
lists the faster classes::

    machine_classes:
      - {thresholds: embedded-fast.yaml, core_speed_min: 40}

A class may also name the host's CPU (``cpu: "AuthenticAMD family 25 model 17"``, as
:func:`host_cpu` reads ``/proc/cpuinfo``; a prefix such as ``AuthenticAMD family 25`` takes
every model): speed alone does not place every host (the Zen 4 VMs' class probe read 20.5 to
44.0 M it/s before five runs in one hour: the base class one run, the fast class the next). A
class naming the CPU fits only that CPU and wins over classes that do not (then the higher
``core_speed_min``).

``machine_class``: ``auto`` probes the cores (about 2 s, before the testbed is up: :func:`class_speed`)
and takes the class with the highest ``core_speed_min`` the host reaches, else the base file; ``base``
takes the base file as it is; a number is the speed to judge by (a speed probed earlier,
e.g. by ``dpgate gate``, which passes it to Robot; a class naming this host's CPU still wins);
a class's file name (``embedded-fast.yaml``) takes that class whatever the host. The class's
file is laid over the base file (``ThresholdFile.overlaid``). A host in a slow phase during the
probe reads as the slower class: looser floors, never a false FAIL.

>>> zen4 = MachineClass("zen4.yaml", cpu="AuthenticAMD family 25 model 17")
>>> base = ThresholdFile(nfs={}, machine_classes=[MachineClass("fast.yaml", 40.0), zen4])
>>> choose(base, 55.0).thresholds, choose(base, 31.0)
('fast.yaml', None)
>>> choose(base, 21.0, "AuthenticAMD family 25 model 17").thresholds, choose(base, 21.0, "AuthenticAMD family 25 model 1")
('zen4.yaml', None)
"""

from __future__ import annotations

import os
import time
from typing import List, Optional, Sequence, Tuple, Union

from dpgate.config.thresholds import MachineClass, ThresholdFile, load_thresholds
from dpgate.exec.hostcpu import cpu_id
from dpgate.model.errors import ConfigError

#: rounds of a core speed probe (every core once a round) and the pause between them (s)
ROUNDS, PAUSE_S = 10, 0.05
#: rounds of the machine-class probe (about 2 s) and the share of its readings the class's
#: ``core_speed_min`` must be reached by (:func:`class_speed`)
CLASS_ROUNDS, CLASS_PAUSE_S, CLASS_QUANTILE = 20, 0.1, 0.25


def host_core_speed(
    cpus: Optional[Sequence[int]] = None, rounds: int = ROUNDS, pause_s: float = PAUSE_S, share: float = 0.5
) -> float:
    """Speed (M it/s) of ``cpus`` (default: every CPU this process may use) over ``rounds``
    probes each, one core at a time (``SpeedProbe``), ``pause_s`` apart: the reading that
    ``share`` of them stay under (:func:`low_quantile`; 0.5: the median)."""
    from dpgate.exec.speedprobe import SpeedProbe

    use = sorted(cpus if cpus is not None else os.sched_getaffinity(0))
    seen: List[float] = []
    with SpeedProbe(use) as probe:
        for _ in range(rounds):
            seen += list(probe.read().values())
            time.sleep(pause_s)
    if not seen:
        raise ConfigError("the core speed probe read nothing (its processes died)", path="machine_class")
    return low_quantile(seen, share)


def class_speed(cpus: Optional[Sequence[int]] = None) -> float:
    """The speed a machine class is picked by: the lower quartile of :data:`CLASS_ROUNDS`
    readings per core over about 2 s. A host that runs our cores at full speed in bursts of a
    second or two reaches a faster class's speed only when it holds it through most of the
    probe: on the Zen 4 host (2026-12-02), whose cores read 20-24 M it/s with single 1 s trials
    at 39-41, the earlier median of 0.6 s read over 40 before 2 of gk74's 24 runs, and those
    runs were judged by the faster class's floors. A slow phase during the probe picks the
    slower class: looser floors, never a false FAIL."""
    return host_core_speed(cpus, CLASS_ROUNDS, CLASS_PAUSE_S, CLASS_QUANTILE)


def low_quantile(values: Sequence[float], share: float) -> float:
    """The value ``share`` of ``values`` lie at or under (linear between neighbours; 0.5 is
    the median).

    >>> low_quantile([22.0, 21.0, 41.0, 23.0, 40.0], 0.5), low_quantile([22.0, 21.0, 41.0, 23.0, 40.0], 0.25)
    (23.0, 22.0)
    >>> low_quantile([30.0], 0.25), low_quantile([21.0, 22.0, 23.0, 40.0], 0.5)
    (30.0, 22.5)
    """
    if not values:
        raise ValueError("no readings")
    ordered = sorted(values)
    at = share * (len(ordered) - 1)
    i = int(at)
    nxt = ordered[min(i + 1, len(ordered) - 1)]
    return ordered[i] + (nxt - ordered[i]) * (at - i)


def host_cpu() -> str:
    """This host's CPU as machine classes name it (``dpgate.exec.hostcpu.cpu_id``:
    ``AuthenticAMD family 25 model 17``), ``""`` where /proc/cpuinfo names none (e.g. not x86)."""
    return cpu_id() or ""


def cpu_matches(wanted: str, cpu: str) -> bool:
    """Whether ``cpu`` (:func:`host_cpu`) is the class's ``wanted`` CPU or one of its models.

    >>> cpu_matches("AuthenticAMD family 25", "AuthenticAMD family 25 model 17")
    True
    >>> cpu_matches("AuthenticAMD family 25 model 1", "AuthenticAMD family 25 model 17"), cpu_matches("x", "")
    (False, False)
    """
    want, have = wanted.split(), cpu.split()
    return bool(want) and have[: len(want)] == want


def choose(base: ThresholdFile, speed: float, cpu: str = "") -> Optional[MachineClass]:
    """The class that fits (``speed`` >= its ``core_speed_min``, ``cpu`` its CPU where it names
    one) and is most specific: naming the CPU (the longer name) first, then the highest
    ``core_speed_min``; None: the base file's."""
    fits = [
        c
        for c in base.machine_classes
        if speed >= c.core_speed_min and (not c.cpu or cpu_matches(c.cpu, cpu))
    ]
    return max(fits, key=lambda c: (len(c.cpu.split()), c.core_speed_min)) if fits else None


def parse_machine_class(value: str) -> Union[None, float, str]:
    """``auto`` -> None (probe), ``base`` -> 0.0 (no class), ``55.2`` -> 55.2 (M it/s), a
    class's file name -> that name (the class itself, whatever the host).

    >>> parse_machine_class("auto"), parse_machine_class("base"), parse_machine_class("55.2")
    (None, 0.0, 55.2)
    >>> parse_machine_class("embedded-fast.yaml")
    'embedded-fast.yaml'
    >>> parse_machine_class("nan")
    Traceback (most recent call last):
    ...
    dpgate.model.errors.ConfigError: machine_class: must be auto, base, a core speed in M it/s (e.g. 55.2) or a class's file name (e.g. embedded-fast.yaml), got 'nan'
    >>> parse_machine_class("fast")
    Traceback (most recent call last):
    ...
    dpgate.model.errors.ConfigError: machine_class: must be auto, base, a core speed in M it/s (e.g. 55.2) or a class's file name (e.g. embedded-fast.yaml), got 'fast'
    """
    v = str(value).strip()
    if v.lower() in ("auto", ""):
        return None
    if v.lower() == "base":
        return 0.0
    if v.endswith((".yaml", ".yml")) and "/" not in v:
        return v
    try:
        speed = float(v)
    except ValueError:
        speed = -1.0
    if not 0 <= speed < float("inf"):
        raise ConfigError(
            "must be auto, base, a core speed in M it/s (e.g. 55.2) or a class's file name"
            f" (e.g. embedded-fast.yaml), got {value!r}",
            path="machine_class",
        )
    return speed


def resolve_thresholds(
    path: str, machine_class: str = "auto", how: str = "given", cpu: Optional[str] = None
) -> Tuple[ThresholdFile, str]:
    """The thresholds of this host's class from ``path`` and why, e.g. ``"embedded-fast.yaml:
    cores at 55.1 M it/s (probed) >= 40, over embedded.yaml"``. Probes only when the file lists
    classes and ``machine_class`` is ``auto``; ``how`` says where a given speed came from
    (``dpgate gate`` probed it); ``cpu``: the host's (default :func:`host_cpu`). Every class's
    file must load, whichever is picked."""
    base = load_thresholds(path)
    name = os.path.basename(path)
    given = parse_machine_class(machine_class)
    if isinstance(given, str):
        return _named(path, base, given)
    if not base.machine_classes:
        return base, name
    speed = class_speed() if given is None else given
    how = "probed" if given is None else how
    if speed == 0.0:
        return base, f"{name} (machine_class=base)"
    files = {mc.thresholds: _class_file(path, mc) for mc in base.machine_classes}
    cpu = host_cpu() if cpu is None else cpu
    pick = choose(base, speed, cpu)
    if pick is None:
        lowest = min((c.core_speed_min for c in base.machine_classes if not c.cpu), default=0.0)
        unlisted = f", CPU {cpu or 'unknown'}" if any(c.cpu for c in base.machine_classes) else ""
        return (
            base,
            f"{name}'s own rows: cores at {speed:.1f} M it/s ({how}), under every class listed"
            f" (>= {lowest:g}){unlisted}",
        )
    top = files[pick.thresholds]
    by = f"CPU {cpu}, " if pick.cpu else ""
    why = (
        f"{pick.thresholds}: {by}cores at {speed:.1f} M it/s ({how}) >= {pick.core_speed_min:g}, over {name}"
    )
    return base.overlaid(top), why


def _named(path: str, base: ThresholdFile, wanted: str) -> Tuple[ThresholdFile, str]:
    """The class ``wanted`` names (its file), laid over ``base``, whatever the host."""
    name = os.path.basename(path)
    for mc in base.machine_classes:
        if mc.thresholds == wanted:
            return base.overlaid(_class_file(path, mc)), f"{wanted}: named (machine_class), over {name}"
    listed = ", ".join(mc.thresholds for mc in base.machine_classes) or "none"
    raise ConfigError(
        f"{wanted!r} is none of {name}'s machine classes (listed: {listed}); give auto, base, a core"
        " speed or one of those",
        path="machine_class",
    )


def check_thresholds(path: str) -> ThresholdFile:
    """Load ``path`` and every machine class's file it lists (a run's preflight: a bad file is
    one error before anything starts, whichever class the host turns out to be)."""
    base = load_thresholds(path)
    for mc in base.machine_classes:
        _class_file(path, mc)
    return base


def _class_file(base_path: str, mc: MachineClass) -> ThresholdFile:
    full = os.path.join(os.path.dirname(os.path.abspath(base_path)), mc.thresholds)
    if not os.path.isfile(full):
        raise ConfigError(
            f"machine class file {mc.thresholds!r} not found beside the thresholds file",
            base_path,
            "machine_classes",
        )
    top = load_thresholds(full)
    if top.machine_classes:
        raise ConfigError("a machine class's file may not list classes of its own", full, "machine_classes")
    return top
