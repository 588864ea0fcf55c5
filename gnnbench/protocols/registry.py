"""The protocols by name: the one place that lists them (:func:`get_protocol`)."""

from __future__ import annotations

from gnnbench.errors import ConfigError
from gnnbench.protocols.base import Protocol
from gnnbench.protocols.benchmarking_gnns.plan import BenchmarkingGNNs
from gnnbench.protocols.fair_comparison.plan import FairComparison
from gnnbench.protocols.heterophily.plan import Heterophily
from gnnbench.protocols.pitfalls.plan import Pitfalls

PLANNED: dict[str, str] = {}  # protocols announced but not yet available: name -> why
REGISTRY: dict[str, Protocol] = {p.name: p for p in (BenchmarkingGNNs(), Pitfalls(), FairComparison(), Heterophily())}


def protocol_names() -> list[str]:
    """The names of the available protocols (``benchmarking-gnns``, ``pitfalls``, ``fair-comparison``,
    ``heterophily``)."""
    return list(REGISTRY)


def get_protocol(name: str, where: str = "protocol") -> Protocol:
    """The protocol called ``name``; an unknown name raises a ConfigError that names ``where`` (the suite key or
    command-line option it came from) and lists the available ones."""
    if name in REGISTRY:
        return REGISTRY[name]
    if name in PLANNED:
        raise ConfigError(f"{where}: protocol {name!r}: {PLANNED[name]}; use one of {', '.join(REGISTRY)}")
    raise ConfigError(f"{where}: unknown protocol {name!r}; choose one of {', '.join(REGISTRY)}")
