*** Settings ***
Documentation     linux-xconnect on the embedded testbed: NDR/PDR per frame size, 1 SUT core.
Resource          ../../resources/embedded.resource
Suite Setup       Embedded Suite Setup    linux-xconnect    64B    IMIX    1518B
Suite Teardown    Embedded Suite Teardown
Test Template     NDRPDR Gate
Test Tags         EMBEDDED    NDRPDR    1C    linux-xconnect

*** Test Cases ***                  FRAME_SIZE
64B-1c-linux-xconnect-ndrpdr      64B
IMIX-1c-linux-xconnect-ndrpdr     IMIX
1518B-1c-linux-xconnect-ndrpdr    1518B
