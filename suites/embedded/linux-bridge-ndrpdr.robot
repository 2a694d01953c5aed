*** Settings ***
Documentation     linux-bridge on the embedded testbed: NDR/PDR per frame size, 1 SUT core.
Resource          ../../resources/embedded.resource
Suite Setup       Embedded Suite Setup    linux-bridge    64B    IMIX    1518B
Suite Teardown    Embedded Suite Teardown
Test Template     NDRPDR Gate
Test Tags         EMBEDDED    NDRPDR    1C    linux-bridge

*** Test Cases ***                  FRAME_SIZE
64B-1c-linux-bridge-ndrpdr      64B
IMIX-1c-linux-bridge-ndrpdr     IMIX
1518B-1c-linux-bridge-ndrpdr    1518B
