*** Settings ***
Documentation     testpmd-io on the embedded testbed: NDR/PDR per frame size, 1 SUT core.
Resource          ../../resources/embedded.resource
Suite Setup       Embedded Suite Setup    testpmd-io    64B    IMIX    1518B
Suite Teardown    Embedded Suite Teardown
Test Template     NDRPDR Gate
Test Tags         EMBEDDED    NDRPDR    1C    testpmd-io

*** Test Cases ***                  FRAME_SIZE
64B-1c-testpmd-io-ndrpdr      64B
IMIX-1c-testpmd-io-ndrpdr     IMIX
1518B-1c-testpmd-io-ndrpdr    1518B
