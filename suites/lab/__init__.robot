*** Settings ***
Documentation     Lab gate: the seed 000 NF matrix (testpmd, l3fwd, VPP L2 patch, VPP MAC switching,
...               OVS-DPDK xconnect, VPP IPv4 routing) x (64B, IMIX, 1518B) x (1, 2, 4 cores) x HT off/on.
...               Needs a lab topology (--variable TOPOLOGY:...) with a TRex server and a DUT over SSH.
