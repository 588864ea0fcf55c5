"""What each dataset named by a preset looks like to a model (inputs, outputs, task), without its data.

Used to count a preset's parameters (``gnnbench params``) and to fit parameter budgets. Generated datasets
describe themselves through their generator (default parameters: SBM PATTERN/CLUSTER, CSL, TSP,
GraphTheoryProp, CYCLES); the others are listed with the input and output sizes of the benchmark's released code
(graphdeeplearning/benchmarking-gnns: its data loaders and ``nets/``; the datasets: docs/datasets.md):

=================  ====================  ==========================  ==========================  =========
dataset            task                  node input                  edge input                  outputs
=================  ====================  ==========================  ==========================  =========
ZINC / AQSOL       graph regression      28 / 65 atom types          4 / 5 bond types            1
MNIST / CIFAR10    graph classification  3 / 5 floats                1 float (affinity)          10
ENZYMES/DD/PROT.   graph classification  18 / 89 / 29 floats         none (ones, node width)     6 / 2 / 2
WikiCS             node classification   300 floats                  none                        10
OGBL-COLLAB        link prediction       128 floats                  2 floats (weight, year)     1
=================  ====================  ==========================  ==========================  =========

The eight graphs of "Pitfalls of GNN Evaluation" (one graph each, node classification, bag-of-words features)
after the protocol's preprocessing, with the feature and class counts of its Table 3: CORA 1,433 / 7, CiteSeer
3,703 / 6, PubMed 500 / 3, CORA-Full 8,710 / 67, Coauthor-CS 6,805 / 15, Coauthor-Physics 8,415 / 5,
Amazon-Computers 767 / 10, Amazon-Photo 745 / 8.

Platonov et al.'s heterophilous graphs under the names the paper prints (``roman-empire``, ``tolokers``,
``chameleon-filtered``, ...): the description of generator ``heterophily`` (feature width and classes of the
released files).

TU edges: the original TU loader gives every edge an all-ones feature as wide as the node features, which
GatedGCN projects with ``Linear(in_dim, hidden)``; the datasets have no edge features and say so by the net
convention ``edge_ones_node_width`` (the constant edge input is as wide as the node features), which the ``tu``
generator's ``variant: dwivedi2020`` sets too.
"""

from __future__ import annotations

from gnnbench.data.generators import get_generator, heterophily
from gnnbench.data.generators.released import BENCHMARK_NAMES
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.errors import ConfigError

_GENERATED = {"SBM_PATTERN": "sbm_pattern", "SBM_CLUSTER": "sbm_cluster", "CSL": "csl", "TSP": "tsp",
              "GraphTheoryProp": "graph_theory_prop", "CYCLES": "cycles"}

_CLASSIFICATION = {"loss": "cross_entropy", "metric": "accuracy"}


def _meta(name: str, task: str, outputs: int, node: FeatureSpec | None, edge: FeatureSpec | None,
          sizes: dict[str, int] | None, *, loss: str, metric: str, pe_usage: str = "add",
          graph_outputs: int = 0, net_conventions: list[str] | None = None) -> DatasetMeta:
    num_graphs = sum(sizes.values()) if sizes else 1
    return DatasetMeta(name=name, task=task, loss=loss, metric=metric, num_outputs=outputs, num_graphs=num_graphs,
                       node_features=node, edge_features=edge, pe_usage=pe_usage, split_sizes=sizes,
                       num_graph_outputs=graph_outputs, net_conventions=list(net_conventions or []))


def _split(train: int, val: int, test: int) -> dict[str, int]:
    return {"train": train, "val": val, "test": test}


def _cont(width: int) -> FeatureSpec:
    return FeatureSpec("continuous", width)


def _cat(vocabulary: int) -> FeatureSpec:
    return FeatureSpec("categorical", vocabulary)


def _tu(name: str, width: int, classes: int) -> DatasetMeta:
    return _meta(name, "graph_classification", classes, _cont(width), None, None, **_CLASSIFICATION,
                 net_conventions=["edge_ones_node_width"])


_EXTERNAL = {
    "ZINC": _meta("ZINC", "graph_regression", 1, _cat(28), _cat(4), _split(10000, 1000, 1000),
                  loss="l1", metric="mae"),
    "AQSOL": _meta("AQSOL", "graph_regression", 1, _cat(65), _cat(5), _split(7831, 996, 996), loss="l1", metric="mae"),
    "MNIST": _meta("MNIST", "graph_classification", 10, _cont(3), _cont(1), _split(55000, 5000, 10000),
                   **_CLASSIFICATION),
    "CIFAR10": _meta("CIFAR10", "graph_classification", 10, _cont(5), _cont(1), _split(45000, 5000, 10000),
                     **_CLASSIFICATION),
    "ENZYMES": _tu("ENZYMES", 18, 6),
    "DD": _tu("DD", 89, 2),
    "PROTEINS_full": _tu("PROTEINS_full", 29, 2),
    "WikiCS": _meta("WikiCS", "node_classification", 10, _cont(300), None, None, **_CLASSIFICATION,
                    net_conventions=["embed_continuous_input", "edge_type_table"]),
    "OGBL-COLLAB": _meta("OGBL-COLLAB", "link_prediction", 1, _cont(128), _cont(2), None,
                         loss="link_bce", metric="hits@50"),
}


_PITFALLS = {name: _meta(name, "node_classification", classes, _cont(features), None, None, **_CLASSIFICATION)
             for name, features, classes in (
                 ("CORA", 1433, 7), ("CiteSeer", 3703, 6), ("PubMed", 500, 3), ("CORA-Full", 8710, 67),
                 ("Coauthor-CS", 6805, 15), ("Coauthor-Physics", 8415, 5), ("Amazon-Computers", 767, 10),
                 ("Amazon-Photo", 745, 8))}
_EXTERNAL.update(_PITFALLS)
# Platonov et al.'s graphs by the names the paper prints (roman-empire, chameleon-filtered, ...): their generator's
# description (feature width and classes of the released files)
_HETEROPHILY = {name.replace("_", "-"): heterophily.describe(name.replace("_", "-"), {"name": name, "mirror": ""}, 0)
                for name in heterophily.NAMES}
_EXTERNAL.update(_HETEROPHILY)


def describe_dataset(name: str) -> DatasetMeta:
    """The description of dataset ``name`` (a preset's dataset): from its generator's defaults for the generated
    datasets, else from the table above; a ConfigError naming the known datasets otherwise."""
    if name in _GENERATED:
        generator = get_generator(_GENERATED[name])
        return generator.describe(name, dict(generator.defaults), 0)
    if name in _EXTERNAL:
        return _EXTERNAL[name]
    known = ", ".join(sorted([*_GENERATED, *_EXTERNAL]))
    raise ConfigError(f"dataset {name!r} is not known to gnnbench; known: {known}")


def published_name(generator: str, default: str, params: dict | None = None) -> str:
    """The benchmark's name for the dataset a generator makes (e.g. sbm_pattern → SBM_PATTERN); generator
    ``released`` makes the dataset its ``params["name"]`` names."""
    if generator == "released" and params:
        return BENCHMARK_NAMES.get(params.get("name"), default)
    # generators of datasets the catalog describes as published data
    also = {"superpixels_mnist": "MNIST", "superpixels_digits": "MNIST", "superpixels_cifar10": "CIFAR10",
            "cycles_release": "CYCLES", "wikics": "WikiCS", "zinc": "ZINC", "aqsol": "AQSOL",
            "ogbl_collab": "OGBL-COLLAB"}
    return {**{g: name for name, g in _GENERATED.items()}, **also}.get(generator, default)
