*** Settings ***
Documentation     l3fwd-ip4 on the embedded testbed: NDR/PDR per frame size, 1 SUT core.
Resource          ../../resources/embedded.resource
Suite Setup       Embedded Suite Setup    l3fwd-ip4    64B    IMIX    1518B
Suite Teardown    Embedded Suite Teardown
Test Template     NDRPDR Gate
Test Tags         EMBEDDED    NDRPDR    1C    l3fwd-ip4

*** Test Cases ***                  FRAME_SIZE
64B-1c-l3fwd-ip4-ndrpdr      64B
IMIX-1c-l3fwd-ip4-ndrpdr     IMIX
1518B-1c-l3fwd-ip4-ndrpdr    1518B
