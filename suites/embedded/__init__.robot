*** Settings ***
Documentation     Embedded gate: every embedded SUT x (64B, IMIX, 1518B) x 1 core.
