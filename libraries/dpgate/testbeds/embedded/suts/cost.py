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
  forwarded frame at saturation (``dpgate.telemetry.paired.SATURATED_FIELD``).
* OVS AF_XDP: the same, on the generator ports: its PMD thread's XSK transmit (copy mode on
  veth) is a ``sendto`` that builds an skb and hands it to the peer on the SUT core, so the
  program runs in the PMD's processing cycles. The skb is linear (the frame is copied out of
  the UMEM), so a load is an in-line load of a few cycles, as on the kernel SUTs, not
  testpmd's out-of-line ~100: the classifier itself is most of a "+5 %".

``N`` for a percentage comes from the calibration table of the host's class
(:func:`calibration_for`, by the generator core's speed probed at injection, as the
thresholds' machine class is picked: :data:`CALIBRATION` on the fast class,
:data:`CALIBRATION_SLOW` below it): the SUT's ``cpp_at_load``, the measured
cost of one unit and of the classifier itself, so that ``percent`` adds that share of the
SUT's cycles per packet (to within one unit: :func:`expected_percent`). ``benchmarks/cpp_at_load.py --calibrate-units N``
measures what ``N`` units really add on a machine (docs/embedded.md has the calibration).

    inject_cost(session.sut, 10)      # after the SUT started; returns what was done
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from dpgate.exec.hostcpu import cpu_model
from dpgate.exec.runner import run
from dpgate.model.errors import ConfigError, EnvironmentProblem

#: Loads per classic BPF program (tc's netlink message holds 16 KiB, 8 bytes an instruction).
BPF_CHUNK = 1900
#: Most injected loads per frame (programs run one after another).
WORK_MAX = 20 * BPF_CHUNK
#: Offsets of the loaded words: within the headers of the smallest frame (60 bytes without
#: FCS), as a load past the frame's end would end the program (cBPF answers 0 there).
LOAD_OFFSETS = tuple(range(14, 46, 4))
#: Per SUT: (reference cpp_at_load, cycles one unit adds, cycles the classifier itself adds),
#: all in cycles per packet as the gate measures cpp_at_load, from
#: ``benchmarks/cpp_at_load.py --calibrate-units N`` (pairs of trials without and with ``N``
#: loads in one bring-up, the program taken off after each; 2 runs x 6 pairs at each of two
#: ``N``) at the rows' ``cpp_load``. The figures belong to a host class: their ratios are
#: what ``units_for`` uses, and they moved between classes (below). Re-run the calibration on
#: a new CI host class before reading an injected step as its nominal percentage.
#: This table: 2026-11-27 night, the CI host class of that day (2-vCPU AMD EPYC VM, probe
#: 52-65 M it/s).
#: Kernel SUTs (the program on the SUT ports; 200 and 10 loads): 200 loads added +266/+277
#: (xconnect), +421/+497 (bridge), +343/+252 (ip4); 10 loads +97/+87, +180/+194, +173/+128;
#: so a load is 0.94, 1.43, 0.78 cycles and the classifier itself 83, 173, 142, on
#: 2,620-2,680, 3,390-3,500 and 4,960-5,010 cycles a packet.
#: Polling SUTs (the program on the generator ports' ingress, run in their transmit call;
#: 10 loads and 1): 10 loads added +1,269/+1,154 (io), +1,232/+1,274 (mac), +1,210/+1,213
#: (OVS-DPDK), 1 load +430/+427, +458/+412, +394/+410: a load is 87, 91, 90 cycles and the
#: classifier 341, 344, 312, on 5,280-5,380, 6,740-6,930 and 5,010-5,130 cycles a packet.
#: The smallest step there is one load, 6-8 %: "+5 %" injects that.
#: The frames testpmd's net_af_packet sends sit in page fragments, so each load takes the
#: kernel's out-of-line path (``skb_copy_bits``).
#: Before 2026-11-26 the work was dependent ``A += 1`` (1.0-1.5 cycles each at full
#: speed), which the host's slow phases did not slow: see the module's docstring.
CALIBRATION: Dict[str, tuple[float, float, float]] = {
    "linux-xconnect": (2650.0, 0.94, 83.0),
    "linux-bridge": (3450.0, 1.43, 173.0),
    "linux-ip4": (4975.0, 0.78, 142.0),
    "testpmd-io": (5320.0, 87.0, 341.0),
    "testpmd-mac": (6840.0, 91.0, 344.0),
    "ovsdpdk-xconnect": (5080.0, 90.0, 312.0),
}
#: The slow class's table (2026-11-26 night, a 2-vCPU VM in a slow phase all along, probe
#: 12-18 M it/s; the same calibration, docs/embedded.md): a load cost 4.2-4.6 cycles on the
#: kernel SUTs, on 3,720-7,350 cycles a packet, and 135-151 on the polling SUTs, on
#: 8,100-11,300; a load is 3-4x the share of a packet's cost it is on the fast class. On the
#: Zen 3 host of 2026-11-28 (probe 13-19 M it/s) the fast table's "+10 %" (194 loads) read
#: +28 to +31 % on linux-xconnect (scaled, 3 runs; +24 to +37 % against its twin) and "+5 %"
#: (53) +9 to +14 %, where this table's 66 and 20 loads make about +12 and +6 % there.
#: OVS AF_XDP (2026-11-29, Zen 3 host, probe 13-19 M it/s, 80 kpps, 2 runs x 6-8 pairs at each
#: N): 1 load +149/+536/+320, 10 loads +528/+570, 200 loads +1,793/+1,777 on 6,480-7,092
#: cycles a packet: a load is 6.5 cycles (10 -> 200) and the classifier about 480. No fast-class
#: figures: on that class the injection refuses it until calibrated there.
#: l3fwd (2026-11-29 late, the same host, probe 14-32 M it/s): it reports no cycles, so its
#: figure is the paired check's at saturation (its thread's CPU time per forwarded frame at
#: 350 kpps offered, 1 s trials scaled at the polling exponent; 20 A B B A pairs per step,
#: program on and off within one bring-up): 1 load +3.9 %, 4 loads +9.1, 6 +10.3, 10 +16.3
#: (each +-1.7 to 3.2 standard error) on ~20,300 cycles a packet: a least-squares line of
#: 272 cycles a load and 580 for the classifier. In the gate (gk25, against the twin, not
#: scaled) its "+5 %" (2 loads) read +6.9 to +9.4 % and "+10 %" (5) +10.8 to +20.7 %.
#: An Intel Xeon VM of the same class by speed (2026-11-30) charges less a load: its own rows
#: are :data:`CALIBRATION_XEON`.
#: OVS on af_packet ports (the same way, 380 kpps offered; its ports' 4 MiB receive buffers):
#: 200 loads +7.9 %, 1000 loads +33.6 % (20 pairs each, the pairs' log ratios scattered 0.15)
#: on ~30,700 cycles a packet: 9.9 cycles a load (OVS sends from a linear buffer, so a load is
#: in line, as on OVS AF_XDP) and about 450 for the classifier.
CALIBRATION_SLOW: Dict[str, tuple[float, float, float]] = {
    "linux-xconnect": (3900.0, 4.25, 110.0),
    "linux-bridge": (4950.0, 4.4, 290.0),
    "linux-ip4": (7250.0, 4.25, 220.0),
    "testpmd-io": (8550.0, 150.0, 255.0),
    "testpmd-mac": (10950.0, 135.0, 410.0),
    "ovsdpdk-xconnect": (8550.0, 150.0, 340.0),
    "ovs-afxdp-xconnect": (6700.0, 6.5, 480.0),
    "l3fwd-ip4": (20300.0, 272.0, 580.0),
    "ovs-xconnect": (30700.0, 9.9, 450.0),
}
#: The Intel Xeon VM of 2026-11-30 (``Intel(R) Xeon(R) Processor``, 2 vCPUs at 2.3 GHz, probe
#: 14-37 M it/s: the slow class by speed, as the Zen 3 host). The same packet loads cost its
#: SUTs a different share of their cycles: calibrated there (``benchmarks/cpp_at_load.py
#: --calibrate-units N --trials 30 --duration 1 --runs 1`` at each SUT's 64B ``cpp_load``, l3fwd at
#: 780 kpps; two ``N`` per SUT, the mean log ratio of 30 pairs, +-1.6 to 2.9 % standard error):
#: testpmd-mac 2 loads +5.8 %, 12 +10.9 %; testpmd-io +3.6, +17.0 %; OVS-DPDK +8.3, +13.8 %;
#: linux-xconnect 20 loads +3.4 %, 300 +35.5 %; linux-bridge +3.7, +31.5 %; linux-ip4 +1.3,
#: +14.8 %; OVS AF_XDP +5.5, +30.9 %; l3fwd 4 loads +5.4 %, 16 +14.9 % (and the day before 5
#: +2.9, 10 +11.9, 12 +8.5 %, the gate's pairs 5 as +6.0 / +6.8 %). The rows: the two points'
#: line in cycles on the two bring-ups' mean base. OVS on af_packet's 265 loads read +9.8 %
#: there as on the Zen 3 host (20 pairs at 940 kpps on 13,020 cycles): the class's row.
#: The kernel SUTs' rows again later that day (11:42-12:09): N = 1 (60 pairs, twice), 100 (40)
#: and 300 (30) besides the two points above, a weighted least-squares line through all of
#: them: a load 2.37 / 2.41 / 1.86 cycles (xconnect, bridge, ip4), the classifier itself 68 /
#: 153 / 68 (+-22 to 28): the two-point rows had it at 25 / 48 / 16, and their "+5 %" read
#: +6.1 to +10.6 % in the gate (gk34), what these rows predict for those loads (6.8, 8.5,
#: 6.8 %). linux-bridge's classifier alone is 5.6 %: its "+5 %" is one load. OVS AF_XDP's
#: points (1: -0.8 and +3.3 %, 100: +13.4 %, 300: +32.6 %) fit 2.77 a load and 59 for the
#: classifier, yet the gate's pairs read its 15 and 70 loads as +8.6 to +18.3 % (gk35, gk37),
#: about twice that. Its row is the line through the gate's readings (``costfit``, 8 runs:
#: 1, 15, 70, 147 loads read +6.0, +9.2, +17.3, +20.7 % on average, gk35, gk37, gk44): 0.11 %
#: a load, +7.4 % (+-1.3) for the classifier, so its "+5 %" is one load (about 7 %).
#: The two saturation SUTs' rows from the gate's own pairs (``benchmarks/gate_signal.py
#: --paired``, its line through the injected runs' readings, ``costfit``): OVS on af_packet's
#: 1, 28, 110, 149, 265, 575 loads read +3.0, +1.6, +7.3, +8.2, +15.8, +25.4 % (means of 2-4
#: runs, gk28, gk39, gk41), a line of 0.044 % a load and +3.0 % (+-1.1) for the classifier on
#: ~15,400 cycles, where the class's row made its "+5 %" +9.8 % and "+10 %" +16.2 %; l3fwd's
#: 1, 3, 5, 6, 10 loads read -0.3, +2.1, +5.5, +7.6, +7.7 % (gk29-gk41): 0.87 % a load, no
#: classifier cost to tell (+0.05 % +-0.8).
CALIBRATION_XEON: Dict[str, tuple[float, float, float]] = {
    "linux-xconnect": (2188.0, 2.37, 68.0),
    "linux-bridge": (2730.0, 2.41, 153.0),
    "linux-ip4": (3670.0, 1.86, 68.0),
    "testpmd-io": (4228.0, 56.7, 39.0),
    "testpmd-mac": (5454.0, 27.8, 261.0),
    "ovsdpdk-xconnect": (4510.0, 24.8, 325.0),
    "ovs-afxdp-xconnect": (2624.0, 2.90, 193.0),
    "l3fwd-ip4": (8964.0, 78.2, 5.0),
    "ovs-xconnect": (15425.0, 6.72, 461.0),
}
#: Host classes by the generator core's probed speed (M it/s, ``dpgate.exec.speedprobe``), the
#: fastest first: (lowest speed, name, table). The thresholds' fast class starts at 40 too.
CLASSES = ((40.0, "fast", CALIBRATION), (0.0, "slow", CALIBRATION_SLOW))
#: Rows calibrated on one CPU model, laid over its speed class's table where that model's
#: figures differ from the class's: (class, CPU model exactly as /proc/cpuinfo names it, short
#: name, rows). The probed speed cannot tell such hosts apart (the Zen 3 and the Xeon VMs both
#: probe 13-37 M it/s). A model without rows takes its class's table as it is.
MODEL_ROWS: Tuple[Tuple[str, str, str, Dict[str, tuple[float, float, float]]], ...] = (
    ("slow", "Intel(R) Xeon(R) Processor", "xeon", CALIBRATION_XEON),
)


def calibration_for(
    speed: Optional[float], model: Optional[str] = None
) -> Tuple[str, Dict[str, tuple[float, float, float]]]:
    """(name, table) of the host class a probed core ``speed`` is in (None: the fast class's),
    with the rows calibrated on CPU ``model`` over it where :data:`MODEL_ROWS` has them.

    >>> calibration_for(55.2)[0], calibration_for(16.4)[0], calibration_for(None)[0]
    ('fast', 'slow', 'fast')
    >>> name, table = calibration_for(23.0, "Intel(R) Xeon(R) Processor")
    >>> name, table["l3fwd-ip4"] == CALIBRATION_XEON["l3fwd-ip4"], calibration_for(23.0, "AMD EPYC 7B13")[1]["l3fwd-ip4"] == CALIBRATION_SLOW["l3fwd-ip4"]
    ('slow-xeon', True, True)
    >>> calibration_for(55.2, "Intel(R) Xeon(R) Processor")[0], calibration_for(23.0, "AMD EPYC 7B13")[0]
    ('fast', 'slow')
    """
    name, table = CLASSES[-1][1], CLASSES[-1][2]
    for lowest, cname, ctable in CLASSES:
        if speed is None or speed >= lowest:
            name, table = cname, ctable
            break
    for cls, cpu, short, rows in MODEL_ROWS:
        if cls == name and model == cpu:
            return f"{name}-{short}", {**table, **rows}
    return name, table


def calibrated_suts() -> List[str]:
    """The SUTs some host class's table calibrates (the others have no cost injection).

    >>> "ovs-afxdp-xconnect" in calibrated_suts(), "linux-xconnect" in calibrated_suts()
    (True, True)
    """
    return sorted({name for _, _, table in CLASSES for name in table})


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


def work_filters(dev: str, n: int) -> List[List[str]]:
    """argv of tc ingress classifiers on ``dev`` doing ``n`` packet loads per frame, no match:
    as many programs of at most :data:`BPF_CHUNK` loads as ``n`` needs (one netlink message
    carries at most 16 KiB of program).

    >>> argv = work_filters("sut0", 3)[0]
    >>> argv[argv.index("prio") + 1], argv[-1]
    ('1', '4,32 0 0 14,32 0 0 18,32 0 0 22,6 0 0 0')
    >>> [len(a[-1].split(",")) - 2 for a in work_filters("sut0", 4000)]
    [1900, 1900, 200]
    """
    n = int(n)
    if not 1 <= n <= WORK_MAX:
        raise ConfigError(
            f"injected work must be 1..{WORK_MAX} BPF loads per frame, got {n} (a smaller --inject-cost)",
            path="inject_cost",
        )
    out = []
    for i, start in enumerate(range(0, n, BPF_CHUNK)):
        k = min(BPF_CHUNK, n - start)
        # A = word at offset (BPF_LD|BPF_W|BPF_ABS = 0x20) k times, then return 0: "no match, go on"
        loads = [f"32 0 0 {LOAD_OFFSETS[j % len(LOAD_OFFSETS)]}" for j in range(k)]
        code = ",".join([str(k + 1)] + loads + ["6 0 0 0"])
        head = ["tc", "filter", "add", "dev", dev, "parent", "ffff:", "protocol", "all", "prio", "1"]
        out.append(head + ["handle", str(i + 1), "bpf", "bytecode", code])
    return out


def _inject_ingress(ns: str, ports, n: int) -> None:
    """The ``n``-instruction programs on each port's ingress (an ingress qdisc added if none)."""
    for p in ports:
        if "ingress" not in run(["tc", "qdisc", "show", "dev", p.name], ns=ns, check=False).stdout:
            run(["tc", "qdisc", "add", "dev", p.name, "ingress"], ns=ns)
        for argv in work_filters(p.name, n):
            run(argv, ns=ns)


def inject_kernel(sut, n: int) -> Dict:
    _inject_ingress(sut.ns, sut.ports(), n)
    return {"method": "tc ingress classic BPF packet loads, JIT-compiled", "bpf_loads_per_frame": int(n)}


def inject_transmit(sut, n: int) -> Dict:
    """``n`` loads per frame on the generator ports' ingress: run by the kernel inside
    a polling SUT's transmit call, on the SUT core (see the module's docstring)."""
    _inject_ingress(sut.tb.tg_ns, sut.tg_ports(), n)
    return {
        "method": "tc ingress classic BPF packet loads on the generator ports, run in the SUT's transmit call",
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
    host's class (``speed``: the generator core's, probed here when not given, about 0.3 s;
    the SUT core may be busy-polling) and CPU ``model`` (read here when not given); returns
    the setting."""
    if speed is None:
        speed = _probe_tg_core(sut)
    if model is None:
        model = cpu_model()
    name, table = calibration_for(speed, model)
    n = units_for(sut.name, percent, table)
    out = inject_units(sut, n)
    out["percent"] = float(percent)
    out["expected_percent"] = round(expected_percent(sut.name, n, table), 1)
    out["calibration"] = name
    if speed is not None:
        out["calibration_speed"] = round(speed, 1)
    return out


def _probe_tg_core(sut) -> Optional[float]:
    from dpgate.config.machineclass import host_core_speed

    try:
        return host_core_speed(list(sut.tb.tg_cpus))
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
