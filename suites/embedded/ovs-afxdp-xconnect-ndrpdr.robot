*** Settings ***
Documentation     ovs-afxdp-xconnect on the embedded testbed: NDR/PDR per frame size, 1 SUT core.
Resource          ../../resources/embedded.resource
Suite Setup       Embedded Suite Setup    ovs-afxdp-xconnect    64B    IMIX    1518B
Suite Teardown    Embedded Suite Teardown
Test Template     NDRPDR Gate
Test Tags         EMBEDDED    NDRPDR    1C    ovs-afxdp-xconnect

*** Test Cases ***                  FRAME_SIZE
64B-1c-ovs-afxdp-xconnect-ndrpdr      64B
IMIX-1c-ovs-afxdp-xconnect-ndrpdr     IMIX
1518B-1c-ovs-afxdp-xconnect-ndrpdr    1518B
