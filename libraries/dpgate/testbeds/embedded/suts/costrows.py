"""Calibration rows of the cost injection (:mod:`dpgate.testbeds.embedded.suts.cost`): per host
class (and per CPU model over it) and SUT, what one injected load and the classifier itself add
to the SUT's cycles per packet, with how each row was measured.
"""

from __future__ import annotations

from typing import Dict, Tuple

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
#: are :data:`CALIBRATION_XEON`. Those were l3fwd's out-of-line loads: its loads are in line since
#: 2026-11-30 night (``cost.INLINE_SUTS``), so this class has no l3fwd row until calibrated again.
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
#: classifier cost to tell (+0.05 % +-0.8). Those were out-of-line loads (bytes 14-45): in line
#: since 2026-11-30 night, its row is 200 in-line loads' +15.3, +14.2, +9.5 % over three runs of 14
#: pairs at 780 kpps (``--calibrate-units 200``, 2026-11-30 20:47-20:52, 4.7-8.0 cycles a load on
#: a base of 9,900-10,500): 5.8 cycles a load on this row's base, the classifier as before. The
#: gate's pairs read those 154 loads ("+10 %") as +5.9, +6.7, +6.3, +5.7, +5.0 % (gk49, 23:21-23:43,
#: bases 8,160-8,540, every 99 % interval above 0); 128 loads +3.9, +4.6, +11.7 % and 258 loads
#: +9.7, +6.5, +8.7 % (gk50, 23:43-00:01); the line through those 11 readings made "+10 %" 434
#: loads, which read +14.2, +15.4, +14.4 % (gk51, 00:02-00:13): the readings bend upwards past
#: 258 loads. The row is ``costfit``'s line through all 14: 0.0281 % a load (+-0.0031) and +0.86 %
#: (+-0.65) for the classifier, on a base of 8,253: "+10 %" is 325 loads, "+5 %" 147.
CALIBRATION_XEON: Dict[str, tuple[float, float, float]] = {
    "linux-xconnect": (2188.0, 2.37, 68.0),
    "linux-bridge": (2730.0, 2.41, 153.0),
    "linux-ip4": (3670.0, 1.86, 68.0),
    "testpmd-io": (4228.0, 56.7, 39.0),
    "testpmd-mac": (5454.0, 27.8, 261.0),
    "ovsdpdk-xconnect": (4510.0, 24.8, 325.0),
    "ovs-afxdp-xconnect": (2624.0, 2.90, 193.0),
    "l3fwd-ip4": (8253.0, 2.32, 71.0),
    "ovs-xconnect": (15425.0, 6.72, 461.0),
}
#: Host classes by the generator core's probed speed (M it/s, ``dpgate.exec.speedprobe``), the
#: fastest first: (lowest speed, name, table). The thresholds' fast class starts at 40 too.
CLASSES = ((40.0, "fast", CALIBRATION), (0.0, "slow", CALIBRATION_SLOW))
#: Rows calibrated on one CPU model, laid over its speed class's table where that model's
#: figures differ from the class's: (class, CPU model exactly as /proc/cpuinfo names it, or with
#: `` family F model M`` after it where the name alone is the vendor's line, short name, rows). The probed speed cannot tell such hosts apart (the Zen 3 and the Xeon VMs both
#: probe 13-37 M it/s). A model without rows takes its class's table as it is.
#: A fast-class Intel Xeon VM (2026-12-02, probe 44-53 M it/s, AMX/AVX-512 FP16 flags): l3fwd's
#: in-line loads (``--calibrate-units 200 --trials 14 --duration 1 --runs 3 --load 800kpps``,
#: 17:40-17:45): +4.2, +5.4, +4.7 % on a base of 7,716-7,849 cycles (1.63-2.10 a load without a
#: classifier). One N, so the classifier's share is the slow Xeon's line's (0.86 %, 67 cycles)
#: and a load is the rest: 1.52 cycles.
#: The polling SUTs there (2026-12-02 18:57-19:07, ``--trials 14 --duration 1 --runs 3`` at each
#: SUT's 64B ``cpp_load``, 2 and 12 loads): testpmd-io +5.3/+6.4/+7.0 % and +15.6/+15.9/+17.6 %
#: on 2,495-2,672 cycles; OVS-DPDK +7.0/+7.8/+6.1, +15.2/+13.0/+15.5 % on 2,425-2,586;
#: testpmd-mac +6.1/+5.1/+6.1, +11.1/+11.2/+13.0 % on 3,156-3,267: a load is 26, 20, 19 cycles
#: and the classifier 110, 133, 148, where the AMD host's fast rows have a load at 87-91 (there
#: "+10 %" was 2 loads on testpmd-io, which read +3.8 % here against the twin, gk79).
#: The kernel SUTs and OVS AF_XDP (19:15-19:28, the same way, 20 and 300 loads; AF_XDP 15 and
#: 150 at 80 kpps): linux-xconnect +84/+83/+91 and +516/+515/+514 cycles on 1,554-1,584;
#: linux-bridge +120/+120/+119, +532/+539/+537 on 1,832-1,863; linux-ip4 +122/+127/+132,
#: +532/+528/+522 on 2,481-2,541; OVS AF_XDP +142/+124/+122, +320/+323/+311 on 1,606-1,685:
#: a load is 1.53, 1.49, 1.43, 1.40 cycles and the classifier 55, 90, 98, 108. A load is a
#: 2.8x larger share of a packet than on the AMD host (0.098 % against 0.035 % on xconnect),
#: whose "+10 %" (194 loads) would make about +22 % here. OVS AF_XDP's classifier alone is
#: about 6.6 %, so its "+5 %" is one load; on the slow Xeon the gate's pairs read its loads
#: at twice the calibration's line (above); here its steps read +7.5 and +10.5 % (gk81), and
#: the others' +5.1 to +6.6 and +9.6 to +11.5 % (gk80, gk81; testpmd-mac's one load +1.6 %).
#: OVS on af_packet ports (2026-12-03 06:24-06:27, the same way at 1,350 kpps offered, its
#: paired check's saturation: 0.9 of the generator's 1.1-1.7 Mpps): 100 loads +599/+533/+569
#: and 400 loads +1,529/+1,602/+1,565 cycles per forwarded frame on 8,201-8,301: a load is 3.33
#: cycles, the classifier 234 (2.8 %, the slow Xeon's gate readings put it at 3.0 %).
#: The gate's pairs read its 54 loads +5.8 and +5.0 %, its 177 loads +10.1 and +9.5 % (gk82).
#: testpmd-mac's row is the gate's own line (``costfit``, 2026-12-03): the calibration's row
#: (3,200, 19.1 a load, classifier 148) made "+5 %" one load, which the pairs read +1.6, +2.7,
#: +4.4 % per kernel cycle (gk80, gk83), its 9 loads +10.0, +7.5, +17.7 %: 0.92 % a load (+-0.16)
#: and 1.9 % (+-0.8) for the classifier on 3,259: "+5 %" is 3 loads, "+10 %" still 9.
CALIBRATION_XEON_FAST: Dict[str, tuple[float, float, float]] = {
    "linux-xconnect": (1568.0, 1.53, 55.0),
    "linux-bridge": (1850.0, 1.49, 90.0),
    "linux-ip4": (2514.0, 1.43, 98.0),
    "ovs-afxdp-xconnect": (1644.0, 1.40, 108.0),
    "l3fwd-ip4": (7764.0, 1.52, 67.0),
    "testpmd-io": (2571.0, 25.7, 110.0),
    "testpmd-mac": (3259.0, 29.8, 61.0),
    "ovsdpdk-xconnect": (2516.0, 19.9, 133.0),
    "ovs-xconnect": (8250.0, 3.33, 234.0),
}
#: The Zen 4 VM (``AMD EPYC``, family 25 model 17; 2026-12-03 16:44-17:23, probe 18-44 M it/s
#: within a run: the slow class): ``--calibrate-units N --trials 14 --duration 1 --runs 3`` at
#: each SUT's 64B ``cpp_load`` of the base file, l3fwd and OVS on af_packet at 600 kpps offered
#: (saturated), three bring-ups a point, each the mean of 14 pairs (+-1 to 4 % standard error):
#: testpmd-mac 2 loads +3.8/+5.1/+6.7 %, 12 +17.6/+28.1/+22.5 % on 7,410-8,751 cycles;
#: testpmd-io +7.5/+4.4/+9.5, +31.0/+31.1/+23.0 % on 5,877-6,956; OVS-DPDK +9.5/+8.0/+8.3,
#: +21.2/+24.6/+15.2 % on 5,796-6,949; linux-xconnect 20 loads +9.7/+3.6/+7.1, 300
#: +26.5/+24.7/+24.6 % on 2,655-3,293; linux-bridge 1 load +9.0/+6.2/+3.1, 20 +11.4/+11.6/+9.2,
#: 300 +21.3/+30.6/+27.1 % on 3,202-4,270; linux-ip4 20 +3.7/+6.5/+4.2, 300 +10.1/+10.9/+13.7 %
#: on 5,068-6,957; OVS AF_XDP (80 kpps) 1 load +13.3/+6.0/+11.3, 15 +15.1/+6.3/+13.3, 150
#: +24.9/+15.1/+19.2 % on 3,356-4,419; l3fwd 1 load +6.1/+5.7/+4.9, 100 +13.5/+12.3/+16.9, 400
#: +23.7/+21.6/+20.9 % on 12,095-14,369; OVS on af_packet 1 load +0.4/+2.2/+5.9, 100
#: +8.0/+9.5/+10.4, 400 +20.2/+14.6/+14.6 % on 16,272-20,919. Each row is the least-squares line
#: through its points in cycles on the mean base. The classifier alone is 8-11 % on
#: linux-bridge, OVS AF_XDP and l3fwd here (the Xeons': 1-7 %), so their "+5 %" is one load
#: that reads 6-10 %; the three-point SUTs bend (a load costs less past 100), which a line
#: splits: its "+5 %" and "+10 %" fall within 1-2 % of the points around them. On this host
#: the slow table made "+10 %" 66 loads on linux-xconnect (+9.7 % by these points), 119 on
#: linux-ip4 (+7.3 %) and "+5 %" one load on testpmd-mac (+3.4 %), and had no l3fwd row.
CALIBRATION_ZEN4: Dict[str, tuple[float, float, float]] = {
    "linux-xconnect": (2890.0, 1.75, 166.0),
    "linux-bridge": (3690.0, 2.03, 291.0),
    "linux-ip4": (5846.0, 1.75, 218.0),
    "ovs-afxdp-xconnect": (3725.0, 2.24, 395.0),
    "l3fwd-ip4": (12937.0, 4.52, 1020.0),
    "testpmd-io": (6519.0, 143.7, 171.0),
    "testpmd-mac": (7804.0, 140.2, 116.0),
    "ovsdpdk-xconnect": (6364.0, 80.5, 364.0),
    "ovs-xconnect": (18637.0, 6.42, 736.0),
}
#: The AMD EPYC Zen 5 VM (``AMD EPYC``, family 26 model 2; 2026-12-05 21:09-21:45, probe 50-64
#: M it/s with slow phases of 27-40 in a few trials: the fast class). ``--calibrate-units N
#: --trials 14 --duration 1 --runs 3`` at each SUT's 64B ``cpp_load`` of embedded-fast.yaml, l3fwd
#: and OVS on af_packet at 1,000 kpps offered (saturated: their NDR 0.24 and 0.19 Mpps), three
#: bring-ups a point, each the median of 14 pairs. The fast class's six rows hold here:
#: linux-xconnect 20 loads +3.6/+4.1/+4.6 %, 300 +14.1/+13.1/+14.8 % on 2,608-3,166 cycles (a
#: line of 1.00 a load and 91 for the classifier, the table's 0.94 and 83); linux-bridge 1 load
#: +5.0/+4.9/+5.1, 20 +7.1/+6.9/+6.7, 300 +19.1/+18.8/+18.1 % (1.47, 187; table 1.43, 173);
#: linux-ip4 20 +6.2/+3.6/+1.7, 300 +10.5/+4.9/+7.6 % in a noisy half hour (0.67, 180; table
#: 0.78, 142); testpmd-io 2 loads +10.3/+10.9/+11.5, 12 +26.5/+25.2/+28.4 % (84, 408; table 87,
#: 341); testpmd-mac +7.3/+7.8/+8.0, +19.3/+19.1/+21.2 % (80, 351; table 91, 344); OVS-DPDK
#: +11.8/+10.5/+11.9, +27.0/+26.6/+27.7 % (82, 409; table 90, 312): by these points the table's
#: "+10 %" makes +9.6 to +10.3 %. Its bases (cycles per packet) read within 1-4 % of the table's,
#: which was measured on "the CI host class of that day" (2026-11-27, probe 52-65, no CPU model
#: recorded then): most likely this CPU. The three SUTs the fast class had no rows for, the
#: least-squares line through their points on the mean base: OVS AF_XDP (80 kpps) 1 load
#: +9.7/+9.8/+11.9, 15 +7.5/+10.0/+11.1, 150 +20.8/+21.7/+21.8 % on 2,912-3,233 (its classifier
#: alone is about 10 %: "+5 %" and "+10 %" are one and five loads, both about +10 %); l3fwd 1 load
#: +5.1/+5.4/+6.6, 100 +10.5/+12.9/+11.9, 400 +22.0/+19.2/+18.7 % on 11,633-12,577; OVS on
#: af_packet 1 load +5.9/+4.2/+4.7, 100 +8.1/+8.9/+7.1, 400 +18.6/+19.8/+19.2 % on
#: 14,127-15,063. As the Zen 4's, these rows are this CPU's whatever the probe reads.
CALIBRATION_ZEN5: Dict[str, tuple[float, float, float]] = {
    "ovs-afxdp-xconnect": (3122.0, 2.29, 300.0),
    "l3fwd-ip4": (12172.0, 4.20, 820.0),
    "ovs-xconnect": (14472.0, 5.26, 676.0),
}
#: The Intel Xeon VM of 2026-12-06/07 (``Intel(R) Xeon(R) Processor`` as the Xeons above, family 6
#: model 207, AVX-512 FP16 without AMX; probe 34-36 M it/s with slow phases of 17-23: the slow
#: class by speed). ``--calibrate-units N --trials 14 --duration 1 --runs 3`` at each SUT's 64B
#: ``cpp_load`` of the base file, l3fwd at 780 kpps and OVS on af_packet at 940 kpps offered
#: (saturated), 2026-12-07 00:11-00:48 (the pairs' cores at 17.0-37.7 M it/s, median 34.6), three
#: bring-ups a point, each the median of 14 pairs, as % on the bring-up's base: testpmd-io 2 loads
#: +4.9/+6.2/+8.2, 12 +14.9/+16.4/+14.9 on 3,187-3,368 cycles; testpmd-mac +6.3/+6.8/+5.4,
#: +13.2/+14.8/+14.5 on 3,896-4,386; OVS-DPDK +4.5/+7.5/+6.1, +15.1/+14.9/+14.6 on 3,326-3,418;
#: linux-xconnect 20 +6.8/+7.7/+8.6, 300 +38.3/+40.1/+38.3 on 1,698-1,787; linux-bridge 1
#: +5.3/+7.3/+6.2, 20 +10.5/+12.3/+4.2, 300 +23.5/+24.5/+34.7 on 2,036-2,507; linux-ip4 20
#: +5.8/+7.2/+4.1, 300 +21.1/+20.7/+20.1 on 2,998-3,315; OVS AF_XDP (80 kpps) 1 +7.6/+3.4/+8.8, 15
#: +5.5/+17.3/+7.3, 150 +19.0/+23.2/+23.2 on 2,153-2,976; l3fwd 1 +6.1/+2.4/+3.1, 100
#: +6.2/+6.1/+7.6, 400 +16.0/+16.8/+15.6 on 7,289-9,084; OVS on af_packet 1 +3.7/+2.5/+3.9, 100
#: +7.1/+7.5/+5.7, 400 +25.0/+21.8/+23.1 on 9,824-10,343. Each row is the least-squares line
#: through its points in cycles on the mean base. By these points the slow Xeon's rows (the
#: model name's slow rows, which this CPU took before) made "+10 %" read +8.6 % (OVS-DPDK, 5
#: loads) to +13.5 % (l3fwd, 325) and "+5 %" +5.0 to +8.2 %; its bases sit 20-35 % under the slow
#: Xeon's. As the Zen 4's and Zen 5's, these rows are this CPU's whatever the probe reads.
CALIBRATION_XEON207: Dict[str, tuple[float, float, float]] = {
    "linux-xconnect": (1726.0, 1.95, 93.0),
    "linux-bridge": (2273.0, 1.65, 153.0),
    "linux-ip4": (3099.0, 1.68, 142.0),
    "ovs-afxdp-xconnect": (2499.0, 2.09, 201.0),
    "l3fwd-ip4": (7775.0, 2.32, 298.0),
    "testpmd-io": (3313.0, 30.0, 151.0),
    "testpmd-mac": (4030.0, 34.2, 174.0),
    "ovsdpdk-xconnect": (3371.0, 29.9, 142.0),
    "ovs-xconnect": (10071.0, 5.11, 265.0),
}
MODEL_ROWS: Tuple[Tuple[str, str, str, Dict[str, tuple[float, float, float]]], ...] = (
    ("slow", "Intel(R) Xeon(R) Processor", "xeon", CALIBRATION_XEON),
    ("fast", "Intel(R) Xeon(R) Processor", "xeon", CALIBRATION_XEON_FAST),
    ("slow", "AMD EPYC family 25 model 17", "zen4", CALIBRATION_ZEN4),
    ("fast", "AMD EPYC family 26 model 2", "zen5", CALIBRATION_ZEN5),
    ("slow", "Intel(R) Xeon(R) Processor family 6 model 207", "xeon207", CALIBRATION_XEON207),
)
