"""Workflow suite configuration: resolution of the default suite and one-line errors for bad configs."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from gnnbench.config.presets import get_preset, run_config
from gnnbench.config.suite import load_suite, load_suite_file
from gnnbench.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[1]

DEFAULT = yaml.safe_load((REPO_ROOT / "config" / "config.yaml").read_text())


def test_default_suite_resolves_to_the_expected_runs():
    suite = load_suite(DEFAULT)
    runs = suite.runs()
    # PATTERN and MNIST-digits: 3 models × 4 seeds each; CSL: 2 models × 2 seeds × 5 folds
    assert len(runs) == 3 * 4 + 3 * 4 + 2 * 2 * 5
    assert suite.raw_files("MNIST-digits") == []  # the offline superpixel variant downloads nothing
    assert {r["fold"] for r in suite.runs("CSL")} == set(range(5))
    assert suite.pe_dim("CSL", "GCN-PE") == 20 and suite.pe_dim("CSL", "GCN") is None
    config = suite.run_config("PATTERN", "GIN", 95)
    assert config["seed"] == 95 and config["epochs"] == 8 and config["batch_size"] == 32
    assert config["hidden_dim"] == 110 and config["init_lr"] == 1e-3  # from the published preset
    assert suite.table_files()[:3] == ["results/tables/CSL.csv", "results/tables/CSL.md", "results/tables/CSL.parquet"]
    assert suite.metrics_files("CSL")[0] == "results/runs/CSL/GCN/seed14/fold0/metrics.json"
    assert suite.datasets["CSL"].split == {"scheme": "stratified_kfold", "folds": 5, "val_fraction": 0.25,
                                           "seed": 1}
    assert suite.datasets["PATTERN"].split == {"scheme": "given"}
    assert suite.device == "auto" and suite.threads_per_run == 1
    csbm = suite.benchmarks["CSBM"]  # the pitfalls block: 10 models, 12 splits in one job each, 2 inits (LabelProp: 1)
    assert csbm.protocol == "pitfalls" and len(csbm.models) == 10 and csbm.num_chunks == 1
    assert csbm.model_inits("GCN") == 2 and csbm.model_inits("LabelProp") == 1
    assert suite.datasets["CSBM"].split == {"scheme": "random_per_class", "splits": 12, "train_per_class": 20,
                                            "val_per_class": 30, "seed": 2018}
    assert csbm.models["GAT"].config["num_heads"] == [8, 1] and csbm.models["GAT"].config["num_epochs"] == 100_000
    assert suite.table_files()[-11:] == ["results/plots/CSBM.png", "results/plots/CSBM.svg"] + [
        f"results/tables/GRAPH-FAMILIES{part}.{ext}" for part in ("", "_folds") for ext in ("csv", "md", "parquet")] + [
        "results/tables/pitfalls.csv", "results/tables/pitfalls.md", "results/tables/pitfalls.parquet"]
    families = suite.benchmarks["GRAPH-FAMILIES"]  # the fair-comparison block: 5 outer folds, tiny grids
    assert families.protocol == "fair-comparison" and families.folds == [0, 1, 2, 3, 4] and families.final_runs == 2
    assert {m: len(g) for m, g in families.grids.items()} == {"Baseline": 2, "GIN": 4}
    assert {c["early_stopping"] for c in families.grids["GIN"]} == {"accuracy", "loss"}
    # every benchmark has two or more models: each gets its paired-significance table
    assert len(suite.significance_files()) == 3 * len(suite.benchmarks) == 15


def test_run_config_layers_preset_overrides_and_coerces_strings():
    config = run_config("SBMs_node_clustering_GCN_PATTERN_100k", {"min_lr": "1e-5", "L": "3", "residual": "false"})
    assert config["min_lr"] == 1e-5 and config["L"] == 3 and config["residual"] is False
    preset = get_preset("SBMs_node_clustering_GCN_PATTERN_100k")
    assert config["hidden_dim"] == preset["net_params"]["hidden_dim"] == 146
    assert config["model"] == "GCN"


def with_change(path: str, value) -> dict:
    """The default config with the value at a dotted path replaced (None deletes it)."""
    config = copy.deepcopy(DEFAULT)
    *parents, last = path.split(".")
    node = config
    for key in parents:
        node = node[key]
    if value is None:
        del node[last]
    else:
        node[last] = value
    return config


BAD_CONFIGS = [
    ("benchmarks.ZINC", {"seeds": [1], "models": {"GCN": "molecules_graph_regression_GCN_ZINC_100k"}},
     "benchmarks.ZINC: unknown dataset 'ZINC'; define it under datasets"),
    ("datasets.CSL.generator", "csl2", "datasets.CSL.generator: unknown generator 'csl2'; choose one of"),
    ("datasets.PATTERN.params.num_trian", 5, "datasets.PATTERN.params.num_trian: unknown parameter of generator"),
    ("datasets.PATTERN.params.p", 1.5, "datasets.PATTERN.params.p: expected a probability in [0, 1], got 1.5"),
    ("benchmarks.PATTERN.models.GCN", "SBMs_node_clustering_GCN_PATERN_100k",
     "unknown preset 'SBMs_node_clustering_GCN_PATERN_100k'; did you mean SBMs_node_clustering_GCN_PATTERN_100k"),
    ("benchmarks.PATTERN.set", {"hiden_dim": 64}, "benchmarks.PATTERN.models.MLP.hiden_dim: unknown config key "
                                                  "'hiden_dim' (did you mean hidden_dim?)"),
    ("benchmarks.PATTERN.set", {"epochs": "three"}, "epochs must be an integer, got 'three'"),
    ("benchmarks.PATTERN.set", {"dropout": 1.5}, "dropout must be in [0, 1), got 1.5"),
    ("benchmarks.PATTERN.seeds", 41, "benchmarks.PATTERN.seeds: 41 is not of type 'array'"),
    ("benchmarks.CSL.folds", [0, 5], "benchmarks.CSL.folds: fold(s) [5] do not exist; CSL has 5 fold(s)"),
    ("device", "tpu", "device: 'tpu' is not one of ['auto', 'cpu', 'cuda']"),
    ("threads", 2, "Additional properties are not allowed ('threads' was unexpected)"),
    ("benchmarks.PATTERN.models.GCN", {"preset": "SBMs_node_clustering_GCN_PATTERN_100k", "sett": {}},
     "benchmarks.PATTERN.models.GCN: Additional properties are not allowed ('sett' was unexpected)"),
    ("benchmarks.PATTERN.models.GatedGCN", {"preset": "SBMs_node_clustering_GatedGCN_PATTERN_100k",
                                            "set": {"edge_feat": True}},
     "benchmarks.PATTERN.models.GatedGCN: model GatedGCN on dataset PATTERN: edge_feat is true but the dataset "
     "has no edge features"),
    ("benchmarks.CSL.models.GAT", "CSL_graph_classification_GAT_CSL_100", "unknown preset"),
    ("benchmarks.CSL.models.GCN", {"set": {"L": 2}}, "benchmarks.CSL.models.GCN: no model given"),
    ("benchmarks.CSL.models.GCN", {"preset": "CSL_graph_classification_GCN_CSL_100k", "set": {"model": "GIN"}},
     "benchmarks.CSL.models.GCN: model GIN needs config key(s) n_mlp_GIN, learn_eps_GIN, neighbor_aggr_GIN; add them"),
    ("benchmarks.CSL.models.GCN", {"preset": "CSL_graph_classification_GCN_CSL_100k", "set": {"model": "GNN"}},
     "benchmarks.CSL.models.GCN: model: unknown model 'GNN'; choose one of MLP, GCN, GraphSage, GAT, MoNet, GIN"),
    ("benchmarks.CSL.models.MF", {"preset": "COLLAB_edge_classification_MF"},
     "benchmarks.CSL.models.MF: model MF cannot do graph_classification (dataset CSL)"),
    ("benchmarks.CSL.models.GIN", {"model": "GIN", "budget": 0}, "benchmarks.CSL.models.GIN.budget"),
    ("benchmarks.CSL.models.GIN", {"budget": 10000}, "a budget needs the model"),
    ("datasets.PATTERN.split", {"scheme": "stratified_kfold"},
     "datasets.PATTERN.split.scheme: stratified_kfold needs graph labels"),
    ("datasets.CSL.split", {"scheme": "given"}, "datasets.CSL.split.scheme: dataset CSL comes without a split"),
    ("datasets.CSL.split", {"protocol": "given"}, "datasets.CSL.split.scheme: dataset CSL comes without a split"),
    ("datasets.CSL.split", {"scheme": "random_per_class"},
     "datasets.CSL.split: protocol benchmarking-gnns evaluates on split schemes given, stratified_kfold, published, "
     "but dataset "
     "CSL is split by random_per_class"),
    ("benchmarks.CSL.protocol", "fair-comparison", "benchmarks.CSL.protocol: protocol fair-comparison needs "
                                                   "continuous node features (one-hot labels, attributes, constant or "
                                                   "degree); dataset CSL has categorical"),
    ("benchmarks.CSL.protocol", "pitfals", "benchmarks.CSL.protocol: unknown protocol 'pitfals'; choose one of "
                                           "benchmarking-gnns, pitfalls, fair-comparison"),
    ("benchmarks.CSL.protocol", "pitfalls", "benchmarks.CSL.protocol: protocol pitfalls needs one graph with node "
                                            "labels (transductive node classification), but dataset CSL is a "
                                            "graph_classification dataset of 150 graphs; use protocol benchmarking"),
    ("benchmarks.CSL.inits", 20, "benchmarks.CSL.inits: not a setting of protocol benchmarking-gnns"),
    ("benchmarks.CSL.seeds", None, "benchmarks.CSL: protocol benchmarking-gnns needs seeds"),
    ("datasets", None, "config: 'datasets' is a required property"),
    ("datasets.PATTERN.params.num_val", 5, "datasets.PATTERN.params.num_val: 5 graphs cannot hold one graph of each "
                                           "of the 10 pattern instances"),
    ("datasets.CSL.params", {"copies_per_class": 0}, "datasets.CSL.params.copies_per_class: expected a positive "
                                                      "integer, got 0"),
]


@pytest.mark.parametrize(("path", "value", "message"), BAD_CONFIGS, ids=[c[0] + str(i) for i, c in
                                                                       enumerate(BAD_CONFIGS)])
def test_bad_configs_give_one_line_errors_naming_the_key(path, value, message):
    with pytest.raises(ConfigError) as err:
        load_suite(with_change(path, value))
    text = str(err.value)
    assert message in text, text
    assert "\n" not in text


def test_config_files_that_are_missing_or_not_yaml(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_suite_file(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("datasets: [unclosed\n")
    with pytest.raises(ConfigError, match="is not valid YAML"):
        load_suite_file(bad)
    assert load_suite_file(Path(REPO_ROOT / "config" / "config.yaml")).benchmarks.keys() == {
        "PATTERN", "CSL", "MNIST-digits", "CSBM", "GRAPH-FAMILIES"}
