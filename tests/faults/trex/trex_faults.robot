*** Settings ***
Documentation     Faults on the TRex path (real TRex v3.08 on a looped TG): each ends with one
...               clear message, finished results are kept, JUnit is written, nothing is left.
Library           TrexLoopLib.py
Suite Setup       Bring Up TRex Loop
Suite Teardown    Tear Down TRex Loop

*** Test Cases ***
64B-trex-loop-ndrpdr
    Find NDR And PDR Over TRex    64B

64B-trex-port-held-by-another-client
    Hold TRex Ports As    alice
    Run Keyword And Continue On Failure    Find NDR And PDR Over TRex    64B
    Trex Ports Should Still Be Held By The Other Client
    [Teardown]    Release TRex Ports

64B-trex-killed-mid-trial
    Kill TRex Server After    5
    Find NDR And PDR Over TRex    64B
