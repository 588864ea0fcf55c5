"""What each dataset named by a preset looks like to a model (inputs, outputs, task), without its data.

Used to count a preset's parameters (``gnnbench params``). Generated datasets describe themselves through
their generator (default parameters); downloaded ones are listed with the sizes the spec states
(benchmarking-gnns.md §1.1): ZINC 28 atom / 4 bond types, AQSOL 65 / 5.
"""

from __future__ import annotations

from gnnbench.data.generators import get_generator
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.errors import ConfigError

_GENERATED = {"SBM_PATTERN": "sbm_pattern", "SBM_CLUSTER": "sbm_cluster", "CSL": "csl"}


def _molecules(name: str, atoms: int, bonds: int, sizes: dict[str, int]) -> DatasetMeta:
    return DatasetMeta(name=name, task="graph_regression", loss="l1", metric="mae", num_outputs=1,
                       num_graphs=sum(sizes.values()), node_features=FeatureSpec("categorical", atoms),
                       edge_features=FeatureSpec("categorical", bonds), pe_usage="add", split_sizes=sizes)


_EXTERNAL = {
    "ZINC": _molecules("ZINC", 28, 4, {"train": 10000, "val": 1000, "test": 1000}),
    "AQSOL": _molecules("AQSOL", 65, 5, {"train": 7831, "val": 996, "test": 996}),
}


def describe_dataset(name: str) -> DatasetMeta:
    if name in _GENERATED:
        generator = get_generator(_GENERATED[name])
        return generator.describe(name, dict(generator.defaults), 0)
    if name in _EXTERNAL:
        return _EXTERNAL[name]
    known = ", ".join(sorted([*_GENERATED, *_EXTERNAL]))
    raise ConfigError(f"dataset {name!r} is not known to gnnbench; known: {known}")
