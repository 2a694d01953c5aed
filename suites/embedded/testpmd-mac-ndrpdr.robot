*** Settings ***
Documentation     testpmd-mac on the embedded testbed: NDR/PDR per frame size, 1 SUT core.
Resource          ../../resources/embedded.resource
Suite Setup       Embedded Suite Setup    testpmd-mac    64B    IMIX    1518B
Suite Teardown    Embedded Suite Teardown
Test Template     NDRPDR Gate
Test Tags         EMBEDDED    NDRPDR    1C    testpmd-mac

*** Test Cases ***                  FRAME_SIZE
64B-1c-testpmd-mac-ndrpdr      64B
IMIX-1c-testpmd-mac-ndrpdr     IMIX
1518B-1c-testpmd-mac-ndrpdr    1518B
