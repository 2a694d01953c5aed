*** Settings ***
Documentation     ovsdpdk-xconnect on the embedded testbed: NDR/PDR per frame size, 1 SUT core.
Resource          ../../resources/embedded.resource
Suite Setup       Embedded Suite Setup    ovsdpdk-xconnect    64B    IMIX    1518B
Suite Teardown    Embedded Suite Teardown
Test Template     NDRPDR Gate
Test Tags         EMBEDDED    NDRPDR    1C    ovsdpdk-xconnect

*** Test Cases ***                  FRAME_SIZE
64B-1c-ovsdpdk-xconnect-ndrpdr      64B
IMIX-1c-ovsdpdk-xconnect-ndrpdr     IMIX
1518B-1c-ovsdpdk-xconnect-ndrpdr    1518B
