*** Settings ***
Documentation     DPDK l3fwd, LPM IPv4 forwarding, 62,500 flows per direction (seed 000 Table 1 NF 3).
...               NDR/PDR per frame size x physical cores (1, 2, 4) x HT (off, on) on a lab
...               testbed: TRex over two ports, bidirectional; SUT pinned to cores allocated
...               from the DUT's lscpu on the NICs' NUMA node. Cases are ordered by core
...               configuration so the SUT restarts only when it changes.
Resource          ../../resources/lab.resource
Suite Setup       Lab Suite Setup    l3fwd-ip4
Suite Teardown    Lab Suite Teardown
Test Template     Lab NDRPDR Gate
Test Tags         LAB    NDRPDR    l3fwd-ip4

*** Test Cases ***                        FRAME_SIZE    CORES    HT
64B-1t1c-ethip4-ip4base-l3fwd-ndrpdr      64B           1        off
IMIX-1t1c-ethip4-ip4base-l3fwd-ndrpdr     IMIX          1        off
1518B-1t1c-ethip4-ip4base-l3fwd-ndrpdr    1518B         1        off
64B-2t1c-ethip4-ip4base-l3fwd-ndrpdr      64B           1        on
IMIX-2t1c-ethip4-ip4base-l3fwd-ndrpdr     IMIX          1        on
1518B-2t1c-ethip4-ip4base-l3fwd-ndrpdr    1518B         1        on
64B-2t2c-ethip4-ip4base-l3fwd-ndrpdr      64B           2        off
IMIX-2t2c-ethip4-ip4base-l3fwd-ndrpdr     IMIX          2        off
1518B-2t2c-ethip4-ip4base-l3fwd-ndrpdr    1518B         2        off
64B-4t2c-ethip4-ip4base-l3fwd-ndrpdr      64B           2        on
IMIX-4t2c-ethip4-ip4base-l3fwd-ndrpdr     IMIX          2        on
1518B-4t2c-ethip4-ip4base-l3fwd-ndrpdr    1518B         2        on
64B-4t4c-ethip4-ip4base-l3fwd-ndrpdr      64B           4        off
IMIX-4t4c-ethip4-ip4base-l3fwd-ndrpdr     IMIX          4        off
1518B-4t4c-ethip4-ip4base-l3fwd-ndrpdr    1518B         4        off
64B-8t4c-ethip4-ip4base-l3fwd-ndrpdr      64B           4        on
IMIX-8t4c-ethip4-ip4base-l3fwd-ndrpdr     IMIX          4        on
1518B-8t4c-ethip4-ip4base-l3fwd-ndrpdr    1518B         4        on
