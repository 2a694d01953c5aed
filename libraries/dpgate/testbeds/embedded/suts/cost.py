"""Cost injection: make the SUT itself do more work per packet, as a code regression would.

``--sut-cpu-steal`` takes CPU time away from the SUT; this adds per-packet work inside the
SUT's own forwarding path, so its cycles per packet (``cpp_at_load``) rise and, for a SUT
faster than the generator no more, its throughput drops:

* kernel SUTs (linux-xconnect, linux-bridge, linux-ip4): one classic-BPF tc classifier on
  each SUT port's ingress, ahead of anything the SUT has there (``prio 1``; the
  cross-connect's own mirred filter is ``prio 10``), doing ``N`` packet loads per frame
  (``ld [k]``, words of the frame's headers, bytes 14-45) and then answering "no match", so
  forwarding is unchanged. The kernel JIT-compiles it (``net.core.bpf_jit_enable``): each
  load becomes a bounds check, a branch, a load and a byte swap, independent of the one
  before, so the work is linear in ``N`` (at most 38,000), cache-hot, and slows with the
  host as the SUT's own code does. (Until 2026-11-26 the work was ``N`` dependent ``A += 1``:
  one cycle each whatever the host did, while the SUT's code ran at half speed in the host's
  slow phases, when another tenant shares the physical core: a dependent add chain timed
  0.32 ns an add in fast and slow phases alike while loads and branches took 0.43 then
  0.70-0.89 ns, so the injected share shrank to about half in a slow phase: +10 % read +3 to
  +6 % on linux-ip4);
* testpmd (io, mac) and OVS-DPDK: the same program on the *generator* ports' ingress. testpmd's
  net_af_packet transmit is a ``sendto`` that the kernel completes on the SUT core: veth
  hands each frame to its peer's backlog there and the softirq that delivers it (through
  that ingress) runs when the call re-enables bottom halves, before testpmd's burst ends.
  So the work lands inside testpmd's own busy cycles (``--record-core-cycles``) per
  forwarded frame, as a slower transmit path would, and forwarding is unchanged. OVS-DPDK's
  PMD thread transmits through the same driver: the work lands in its processing cycles. (DPDK's
  ``noisy`` engine, the lab driver's injection, records no cycles in 22.11 and has no mac
  variant.)
* l3fwd (and OVS on af_packet ports): the same program on the generator ports, run in their
  transmit call (l3fwd's net_af_packet ``sendto``, OVS's ``sendmmsg``); neither reports
  busy cycles, so the calibration and the paired check read their threads' CPU time per
  forwarded frame at saturation (``dpgate.telemetry.paired.SATURATED_FIELD``). l3fwd's loads
  read the link header's words, in line (:data:`INLINE_SUTS`): beyond it a load cost it up to
  2.8 x as much in a slow phase of the host as in a fast one, its own code 1.3 x.
* OVS AF_XDP: the same, on the generator ports: its PMD thread's XSK transmit (copy mode on
  veth) is a ``sendto`` that builds an skb and hands it to the peer on the SUT core, so the
  program runs in the PMD's processing cycles. The skb is linear (the frame is copied out of
  the UMEM), so a load is an in-line load of a few cycles, as on the kernel SUTs, not
  testpmd's out-of-line ~100: the classifier itself is most of a "+5 %".

``N`` for a percentage comes from the calibration table of the host's class
(:func:`calibration_for`, by the generator core's speed probed at injection, the lower
quartile of 2 s as the thresholds' machine class is picked, and by the CPU's own rows where
it has them: :data:`CALIBRATION` on the fast class, :data:`CALIBRATION_SLOW` below it): the
SUT's ``cpp_at_load``, the measured cost of one unit and of the classifier itself, so that
``percent`` adds that share of the SUT's cycles per packet (to within one unit:
:func:`expected_percent`). ``benchmarks/cpp_at_load.py --calibrate-units N`` measures what
``N`` units really add on a machine (docs/embedded.md has the calibration).

    inject_cost(session.sut, 10)      # after the SUT started; returns what was done
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from dpgate.exec.hostcpu import cpu_family_model, cpu_model
from dpgate.exec.runner import run
from dpgate.model.errors import ConfigError, EnvironmentProblem
from dpgate.testbeds.embedded.suts.costrows import (  # noqa: F401 (re-exported)
    CALIBRATION,
    CALIBRATION_SLOW,
    CALIBRATION_XEON,
    CALIBRATION_XEON207,
    CALIBRATION_XEON_FAST,
    CALIBRATION_ZEN4,
    CALIBRATION_ZEN5,
    CLASSES,
    MODEL_ROWS,
)

#: Loads per classic BPF program (tc's netlink message holds 16 KiB, 8 bytes an instruction).
BPF_CHUNK = 1900
#: Most injected loads per frame (programs run one after another).
WORK_MAX = 20 * BPF_CHUNK
#: Offsets of the loaded words: within the headers of the smallest frame (60 bytes without
#: FCS), as a load past the frame's end would end the program (cBPF answers 0 there).
LOAD_OFFSETS = tuple(range(14, 46, 4))
#: Offsets of in-line loads: the Ethernet header's words, bytes 0-11, the part of the frame an
#: af_packet transmit skb holds in its linear head (``tpacket_snd`` copies the link header there
#: and leaves the rest in the ring's pages, where each load beyond it is an ``skb_copy_bits``).
INLINE_OFFSETS = (0, 4, 8)
#: SUTs whose injected loads are in line (:data:`INLINE_OFFSETS`). l3fwd's out-of-line loads
#: cost 68 cycles each in a fast phase of the Xeon host and 189-194 in a slow one an hour apart
#: (+8.4 and +18.3 % for 11 loads), while l3fwd's own cycles per frame moved 1.3 x: its "+10 %"
#: read +2.2 to +21.5 % in the gate (gk43, gk46), the small ones in the fast phases. In-line
#: loads follow the host as its own code does: 4.7-8.0 cycles a load over the same hour.
INLINE_SUTS = ("l3fwd-ip4",)


def calibration_for(
    speed: Optional[float], model: Optional[str] = None, family: Optional[str] = None
) -> Tuple[str, Dict[str, tuple[float, float, float]]]:
    """(name, table) of the host class a probed core ``speed`` is in (None: the fast class's),
    with the rows calibrated on CPU ``model`` over it where :data:`MODEL_ROWS` has them: rows
    named by model and ``family`` (``family F model M``, ``hostcpu.cpu_family_model``) first,
    then rows named by the model alone; a CPU named by model and family whose rows are of
    another class only takes them (:func:`_own_rows`).

    >>> calibration_for(55.2)[0], calibration_for(16.4)[0], calibration_for(None)[0]
    ('fast', 'slow', 'fast')
    >>> name, table = calibration_for(23.0, "Intel(R) Xeon(R) Processor")
    >>> name, table["testpmd-mac"] == CALIBRATION_XEON["testpmd-mac"], calibration_for(23.0, "AMD EPYC 7B13")[1]["testpmd-mac"] == CALIBRATION_SLOW["testpmd-mac"]
    ('slow-xeon', True, True)
    >>> calibration_for(55.2, "Intel(R) Xeon(R) Processor")[0], calibration_for(55.2, "AMD EPYC 7B13")[0]
    ('fast-xeon', 'fast')
    >>> calibration_for(42.5, "AMD EPYC", "family 25 model 17")[0]  # its own rows, one class's
    'slow-zen4'
    >>> calibration_for(44.0, "Intel(R) Xeon(R) Processor", "family 6 model 207")[0]  # not fast-xeon's
    'slow-xeon207'
    """
    name, table = CLASSES[-1][1], CLASSES[-1][2]
    for lowest, cname, ctable in CLASSES:
        if speed is None or speed >= lowest:
            name, table = cname, ctable
            break

    def rows_of(key: Optional[str]) -> Optional[Tuple[str, Dict[str, tuple[float, float, float]]]]:
        for cls, cpu, short, rows in MODEL_ROWS:
            if cls == name and key == cpu:
                return f"{name}-{short}", {**table, **rows}
        return None

    # a CPU's own rows (model and family) before the rows of its model name's other CPUs
    own = None
    if model and family:
        own = rows_of(f"{model} {family}") or _own_rows(f"{model} {family}")
    return own or rows_of(model) or (name, table)


def _own_rows(cpu: Optional[str]) -> Optional[Tuple[str, Dict[str, tuple[float, float, float]]]]:
    """The rows of a CPU named by model and family when they are of one class only, whatever
    class the probe read: they were calibrated on that CPU over the speeds it runs at. The Zen
    4 VM (rows ``slow-zen4``, its probe 18-44 M it/s within a run) read 42.5 M it/s over 2 s
    before one linux-xconnect "+5 %" (gk87, 2026-12-04), and the fast table made it 53 loads
    where its own rows make one. A model name alone (``Intel(R) Xeon(R) Processor``: several
    CPUs) keeps the class the probe picks.

    >>> _own_rows("AMD EPYC family 25 model 17")[0], _own_rows("AMD EPYC family 25 model 1")
    ('slow-zen4', None)
    """
    own = [(cls, short, rows) for cls, key, short, rows in MODEL_ROWS if cpu is not None and key == cpu]
    if len(own) != 1:
        return None
    cls, short, rows = own[0]
    return f"{cls}-{short}", {**next(t for _, n, t in CLASSES if n == cls), **rows}


def calibrated_suts() -> List[str]:
    """The SUTs some host class's table calibrates (the others have no cost injection).

    >>> "ovs-afxdp-xconnect" in calibrated_suts(), "linux-xconnect" in calibrated_suts()
    (True, True)
    """
    tables = [table for _, _, table in CLASSES] + [rows for _, _, _, rows in MODEL_ROWS]
    return sorted({name for table in tables for name in table})


def units_for(sut_name: str, percent: float, table: Optional[Dict] = None) -> int:
    """Injection units (loads per frame) for ``percent`` more cycles per packet on ``sut_name``
    by the calibration ``table`` (default :data:`CALIBRATION`): the classifier's own cost
    counts towards it, and at least one load is injected.

    >>> units_for("linux-ip4", 10), units_for("linux-xconnect", 10), units_for("testpmd-io", 10)
    (456, 194, 2)
    >>> units_for("linux-xconnect", 10, CALIBRATION_SLOW), units_for("linux-xconnect", 5, CALIBRATION_SLOW)
    (66, 20)
    """
    table = CALIBRATION if table is None else table
    if not 0 < percent <= 100:
        raise ConfigError(
            f"injected cost must be a percentage in (0, 100], got {percent!r}", path="inject_cost"
        )
    if sut_name not in table and sut_name in calibrated_suts():
        raise ConfigError(
            f"cost injection for SUT {sut_name!r} is not calibrated on this host class (calibrated "
            f"here: {', '.join(sorted(table))}); calibrate it with benchmarks/cpp_at_load.py "
            "--calibrate-units N (docs/embedded.md), or use --sut-cpu-steal",
            path="inject_cost",
        )
    if sut_name not in table:
        raise ConfigError(
            f"cost injection is not available for SUT {sut_name!r} (available: "
            f"{', '.join(sorted(table))}); use --sut-cpu-steal for it",
            path="inject_cost",
        )
    base, unit, fixed = table[sut_name]
    return max(1, int(round((percent / 100.0 * base - fixed) / unit)))


def expected_percent(sut_name: str, units: int, table: Optional[Dict] = None) -> float:
    """The rise in cycles per packet ``units`` loads should make on ``sut_name``, in percent
    (what :func:`units_for` aimed at, up to one unit's granularity).

    >>> round(expected_percent("testpmd-io", units_for("testpmd-io", 5)), 1)
    8.0
    """
    base, unit, fixed = (CALIBRATION if table is None else table)[sut_name]
    return 100.0 * (fixed + unit * int(units)) / base


def work_filters(dev: str, n: int, offsets: Tuple[int, ...] = LOAD_OFFSETS) -> List[List[str]]:
    """argv of tc ingress classifiers on ``dev`` doing ``n`` packet loads per frame (words at
    ``offsets`` in turn), no match: as many programs of at most :data:`BPF_CHUNK` loads as
    ``n`` needs (one netlink message carries at most 16 KiB of program).

    >>> argv = work_filters("sut0", 3)[0]
    >>> argv[argv.index("prio") + 1], argv[-1]
    ('1', '4,32 0 0 14,32 0 0 18,32 0 0 22,6 0 0 0')
    >>> work_filters("tg0", 4, INLINE_OFFSETS)[0][-1]
    '5,32 0 0 0,32 0 0 4,32 0 0 8,32 0 0 0,6 0 0 0'
    >>> [len(a[-1].split(",")) - 2 for a in work_filters("sut0", 4000)]
    [1900, 1900, 200]
    """
    n = int(n)
    if not offsets or any(not 0 <= o <= 56 for o in offsets):
        raise ConfigError(f"load offsets must be words within 60 bytes, got {offsets!r}", path="inject_cost")
    if not 1 <= n <= WORK_MAX:
        raise ConfigError(
            f"injected work must be 1..{WORK_MAX} BPF loads per frame, got {n} (a smaller --inject-cost)",
            path="inject_cost",
        )
    out = []
    for i, start in enumerate(range(0, n, BPF_CHUNK)):
        k = min(BPF_CHUNK, n - start)
        # A = word at offset (BPF_LD|BPF_W|BPF_ABS = 0x20) k times, then return 0: "no match, go on"
        loads = [f"32 0 0 {offsets[j % len(offsets)]}" for j in range(k)]
        code = ",".join([str(k + 1)] + loads + ["6 0 0 0"])
        head = ["tc", "filter", "add", "dev", dev, "parent", "ffff:", "protocol", "all", "prio", "1"]
        out.append(head + ["handle", str(i + 1), "bpf", "bytecode", code])
    return out


def _inject_ingress(ns: str, ports, n: int, offsets: Tuple[int, ...] = LOAD_OFFSETS) -> None:
    """The ``n``-instruction programs on each port's ingress (an ingress qdisc added if none)."""
    for p in ports:
        if "ingress" not in run(["tc", "qdisc", "show", "dev", p.name], ns=ns, check=False).stdout:
            run(["tc", "qdisc", "add", "dev", p.name, "ingress"], ns=ns)
        for argv in work_filters(p.name, n, offsets):
            run(argv, ns=ns)


def inject_kernel(sut, n: int) -> Dict:
    _inject_ingress(sut.ns, sut.ports(), n)
    return {"method": "tc ingress classic BPF packet loads, JIT-compiled", "bpf_loads_per_frame": int(n)}


def inject_transmit(sut, n: int) -> Dict:
    """``n`` loads per frame on the generator ports' ingress: run by the kernel inside
    a polling SUT's transmit call, on the SUT core (see the module's docstring)."""
    inline = sut.name in INLINE_SUTS
    _inject_ingress(sut.tb.tg_ns, sut.tg_ports(), n, INLINE_OFFSETS if inline else LOAD_OFFSETS)
    where = "the link header's (in line)" if inline else "the headers'"
    return {
        "method": f"tc ingress classic BPF packet loads of {where} words on the generator ports, "
        "run in the SUT's transmit call",
        "bpf_loads_per_frame": int(n),
    }


#: Polling SUTs whose injection is on the generator ports' ingress (run in their transmit call).
TRANSMIT_SUTS = ("ovsdpdk-xconnect", "ovs-afxdp-xconnect", "l3fwd-ip4", "ovs-xconnect")


def inject_units(sut, n: int) -> Dict:
    """``n`` units of per-packet work in a started SUT (kernel SUT, testpmd, l3fwd, any OVS)."""
    if sut.name.startswith("linux-"):
        return inject_kernel(sut, n)
    if sut.name in TRANSMIT_SUTS or sut.name.startswith("testpmd-"):
        return inject_transmit(sut, n)
    raise ConfigError(f"cost injection is not available for SUT {sut.name!r}", path="inject_cost")


def remove_injection(sut) -> None:
    """Take the injected programs (``prio 1`` ingress filters) off again, wherever they are, and
    the ingress qdisc too where no other filter is left on it: an injection adds one where the
    port had none, and a calibration pair's "without" trial must be the port as the gate's
    baseline has it (linux-xconnect's own mirred filters keep theirs)."""
    where = [(sut.ns, sut.ports()), (sut.tb.tg_ns, sut.tg_ports())]
    for ns, ports in where:
        for p in ports:
            run(["tc", "filter", "del", "dev", p.name, "parent", "ffff:", "prio", "1"], ns=ns, check=False)
            left = run(["tc", "filter", "show", "dev", p.name, "ingress"], ns=ns, check=False)
            if left.returncode == 0 and not left.stdout.strip():
                run(["tc", "qdisc", "del", "dev", p.name, "ingress"], ns=ns, check=False)


def inject_cost(sut, percent: float, speed: Optional[float] = None, model: Optional[str] = None) -> Dict:
    """Inject ``percent`` more per-packet work into a started SUT by the calibration of the
    host's class (``speed``: the generator core's, probed here when not given, about 2 s;
    the SUT core may be busy-polling) and CPU ``model`` (read here when not given); returns
    the setting."""
    if speed is None:
        speed = _probe_tg_core(sut)
    family = None
    if model is None:
        model, family = cpu_model(), cpu_family_model()
    name, table = calibration_for(speed, model, family)
    n = units_for(sut.name, percent, table)
    out = inject_units(sut, n)
    out["percent"] = float(percent)
    out["expected_percent"] = round(expected_percent(sut.name, n, table), 1)
    out["calibration"] = name
    if speed is not None:
        out["calibration_speed"] = round(speed, 1)
    return out


def _probe_tg_core(sut) -> Optional[float]:
    """The generator core's speed the table is picked by: the machine-class probe's lower
    quartile over about 2 s (``machineclass.class_speed``). The earlier median of 10 reads
    (0.5 s) read over 40 M it/s in 2 of 4 linux-ip4 runs on the Zen 4 host (2026-12-03,
    18-44 M it/s within a run), which took the fast table: 137 and 456 loads for "+5 %" and
    "+10 %", read +6.2 % and +17.9 % against the slow-zen4 rows' 42 and 209 loads."""
    from dpgate.config.machineclass import class_speed

    try:
        return class_speed(list(sut.tb.tg_cpus))
    except (ConfigError, EnvironmentProblem, OSError):
        return None  # no reading: the fast class's table, and the record says which


def cost_metrics(info: Dict) -> Dict:
    """The record's ``injected_cost*`` metrics of an injection's setting: the percentage asked,
    the loads per frame, what the table expects them to add and which class's table it was.

    >>> cost_metrics({"percent": 10.0, "bpf_loads_per_frame": 66, "expected_percent": 10.0, "calibration": "slow"})
    {'injected_cost': 0.1, 'injected_cost_loads': 66, 'injected_cost_expected': 0.1, 'injected_cost_calibration': 'slow'}
    """
    out: Dict = {"injected_cost": info["percent"] / 100.0}
    if "bpf_loads_per_frame" in info:
        out["injected_cost_loads"] = info["bpf_loads_per_frame"]
    if "expected_percent" in info:
        out["injected_cost_expected"] = round(info["expected_percent"] / 100.0, 4)
    if "calibration" in info:
        out["injected_cost_calibration"] = info["calibration"]
    return out
