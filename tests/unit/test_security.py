"""Security hygiene: no shell strings anywhere in the product code; embedded traffic stays
inside 198.18.0.0/15."""

import os
import re

import pytest

from dpgate.config.topology import topology_from_data
from dpgate.model.errors import ConfigError

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "libraries")
FORBIDDEN = [
    r"shell\s*=\s*True",
    r"\bos\.system\s*\(",
    r"\bos\.popen\s*\(",
    r"subprocess\.getoutput",
    r"subprocess\.getstatusoutput",
    r"\bcommands\.getoutput",
]


def python_files():
    for base, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                yield os.path.join(base, f)


def test_there_is_code_to_scan():
    assert len(list(python_files())) > 20


@pytest.mark.parametrize("pattern", FORBIDDEN)
def test_no_shell_command_strings(pattern):
    hits = []
    for path in python_files():
        with open(path) as fh:
            for n, line in enumerate(fh, 1):
                if re.search(pattern, line) and not line.lstrip().startswith("#"):
                    hits.append(f"{os.path.relpath(path, ROOT)}:{n}: {line.strip()}")
    assert not hits, "shell strings are forbidden (use argv lists):\n" + "\n".join(hits)


def embedded(ip_tg="198.18.255.1/24", ip_sut="198.18.255.2/24"):
    return {
        "name": "e",
        "kind": "embedded",
        "nodes": {
            "TG": {
                "type": "TG",
                "namespace": "{prefix}tg",
                "cpus": [0],
                "interfaces": {
                    "port0": {"name": "tg0", "mac": "02:00:00:00:00:01", "ip4": ip_tg, "link": "l1"}
                },
            },
            "DUT1": {
                "type": "DUT",
                "namespace": "{prefix}sut",
                "cpus": [1],
                "interfaces": {
                    "port0": {"name": "sut0", "mac": "02:00:00:00:00:11", "ip4": ip_sut, "link": "l1"}
                },
            },
        },
    }


@pytest.mark.parametrize(
    "addr", ["10.0.0.1/24", "192.168.1.1/24", "8.8.8.8/24", "198.20.0.1/24", "127.0.0.1/8"]
)
def test_embedded_refuses_addresses_outside_the_benchmarking_range(addr):
    with pytest.raises(ConfigError, match=r"198\.18\.0\.0/15"):
        topology_from_data(embedded(ip_tg=addr), source="t.yaml")


def test_embedded_accepts_the_benchmarking_range():
    t = topology_from_data(embedded(ip_tg="198.19.0.1/24"), source="t.yaml", prefix="x-")
    assert t.tg.namespace == "x-tg"
