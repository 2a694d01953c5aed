*** Settings ***
Documentation     OVS-DPDK L2 port cross-connect, point-to-point (seed 000 Table 1 NF 6).
...               NDR/PDR per frame size x physical cores (1, 2, 4) x HT (off, on) on a lab
...               testbed: TRex over two ports, bidirectional; SUT pinned to cores allocated
...               from the DUT's lscpu on the NICs' NUMA node. Cases are ordered by core
...               configuration so the SUT restarts only when it changes.
Resource          ../../resources/lab.resource
Suite Setup       Lab Suite Setup    ovsdpdk-xconnect
Suite Teardown    Lab Suite Teardown
Test Template     Lab NDRPDR Gate
Test Tags         LAB    NDRPDR    ovsdpdk-xconnect

*** Test Cases ***                        FRAME_SIZE    CORES    HT
64B-1t1c-eth-l2xcbase-ovsdpdk-ndrpdr      64B           1        off
IMIX-1t1c-eth-l2xcbase-ovsdpdk-ndrpdr     IMIX          1        off
1518B-1t1c-eth-l2xcbase-ovsdpdk-ndrpdr    1518B         1        off
64B-2t1c-eth-l2xcbase-ovsdpdk-ndrpdr      64B           1        on
IMIX-2t1c-eth-l2xcbase-ovsdpdk-ndrpdr     IMIX          1        on
1518B-2t1c-eth-l2xcbase-ovsdpdk-ndrpdr    1518B         1        on
64B-2t2c-eth-l2xcbase-ovsdpdk-ndrpdr      64B           2        off
IMIX-2t2c-eth-l2xcbase-ovsdpdk-ndrpdr     IMIX          2        off
1518B-2t2c-eth-l2xcbase-ovsdpdk-ndrpdr    1518B         2        off
64B-4t2c-eth-l2xcbase-ovsdpdk-ndrpdr      64B           2        on
IMIX-4t2c-eth-l2xcbase-ovsdpdk-ndrpdr     IMIX          2        on
1518B-4t2c-eth-l2xcbase-ovsdpdk-ndrpdr    1518B         2        on
64B-4t4c-eth-l2xcbase-ovsdpdk-ndrpdr      64B           4        off
IMIX-4t4c-eth-l2xcbase-ovsdpdk-ndrpdr     IMIX          4        off
1518B-4t4c-eth-l2xcbase-ovsdpdk-ndrpdr    1518B         4        off
64B-8t4c-eth-l2xcbase-ovsdpdk-ndrpdr      64B           4        on
IMIX-8t4c-eth-l2xcbase-ovsdpdk-ndrpdr     IMIX          4        on
1518B-8t4c-eth-l2xcbase-ovsdpdk-ndrpdr    1518B         4        on
