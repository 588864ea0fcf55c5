"""One model registry for the three zoos: families and variants, the model contract, key ownership across
protocols (which key of a run config comes from where) and the one-line refusals of combinations that cannot run."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from conftest import labelled, one_batch, random_graphs

from gnnbench.config.presets import get_preset, run_config
from gnnbench.data.catalog import describe_dataset
from gnnbench.data.meta import DatasetMeta, FeatureSpec
from gnnbench.errors import ConfigError
from gnnbench.models.build import (
    ModelData,
    SingleStacked,
    build_model,
    build_stacked,
    check_buildable,
    check_fits,
    count_parameters,
    num_parameters,
)
from gnnbench.models.registry import FAMILIES, REGISTRY, model_info, resolve
from gnnbench.models.stacked import NodeGraph, count_stacked_parameters
from gnnbench.protocols.fair_comparison import grid as fc_grid
from gnnbench.protocols.fair_comparison import train as fc_train
from gnnbench.protocols.registry import get_protocol
from gnnbench.suite import load_suite

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT = yaml.safe_load((REPO_ROOT / "config" / "config.yaml").read_text())
P1, P2, P3 = (get_protocol(n) for n in ("benchmarking-gnns", "pitfalls", "fair-comparison"))

EXPECTED = {
    "dwivedi2020": {"MLP", "GCN", "GraphSAGE", "GAT", "MoNet", "GIN", "GatedGCN", "RingGNN", "3WLGNN", "MF"},
    "shchur2018": {"GCN", "GAT", "MoNet", "GraphSAGE", "MLP", "LogReg", "LabelProp"},
    "errica2020": {"GIN", "GraphSAGE", "DGCNN", "DiffPool", "ECC", "MolecularFingerprint", "DeepMultisets"},
    "platonov2023": {"ResNet", "GCN", "SAGE", "GAT", "GAT-sep", "GT", "GT-sep"},
}


def graph_classification_meta(width: int = 3, classes: int = 6) -> DatasetMeta:
    """An ENZYMES-like dataset: many graphs, continuous node features (what fair-comparison evaluates on)."""
    return DatasetMeta(name="test-graphs", task="graph_classification", loss="cross_entropy", metric="accuracy",
                       num_outputs=classes, num_graphs=20, node_features=FeatureSpec("continuous", width),
                       edge_features=None, pe_usage="add", split_sizes=None)


def continuous_batch(width: int = 3, classes: int = 6, graphs: int = 5):
    columns = labelled(random_graphs(graphs, seed=3, min_nodes=4, max_nodes=9), "graph_classification", classes)
    rng = np.random.default_rng(0)
    columns.node["x"] = rng.normal(size=(int(columns.num_nodes.sum()), width)).astype(np.float32)
    return columns, one_batch(columns)


# ------------------------------------------------------------------------------------------------- the registry


def test_registry_lists_every_family_of_every_zoo_once_spelled():
    registered: dict[str, set[str]] = {}
    for family, variant in REGISTRY:
        registered.setdefault(variant, set()).add(family)
    assert registered == EXPECTED
    assert "GraphSage" not in FAMILIES  # one spelling per family
    for (family, variant), entry in REGISTRY.items():
        assert entry.note, (family, variant)  # each variant says how its layer differs
        assert entry.load() is not None
    assert model_info({"model": "GCN"}, "shchur2018").has_stacked
    assert not model_info({"model": "GCN"}).has_stacked
    info = model_info({"model": "DiffPool"})  # the only variant of the family, whatever the default
    assert (info.variant, info.own_readout, info.tasks) == ("errica2020", True, ("graph_classification",))
    assert "hidden_dim" in model_info({"model": "GatedGCN"}).architecture_keys


def test_variant_resolution_and_its_one_line_errors():
    assert resolve({"model": "GIN"}, "errica2020").variant == "errica2020"
    assert resolve({"model": "GIN"}).variant == "dwivedi2020"
    assert resolve({"model": "GIN", "variant": "errica2020"}).variant == "errica2020"
    with pytest.raises(ConfigError, match="model GIN exists in several zoos .* set variant"):
        resolve({"model": "GIN"}, "shchur2018")
    with pytest.raises(ConfigError, match="model DGCNN has variant.s. errica2020, not 'dwivedi2020'"):
        resolve({"model": "DGCNN", "variant": "dwivedi2020"})
    with pytest.raises(ConfigError, match="unknown model 'GraphSage' .did you mean GraphSAGE.."):
        resolve({"model": "GraphSage"})


def test_every_protocol_declares_its_variant_and_training_keys():
    assert (P1.default_variant, P2.default_variant, P3.default_variant) == ("dwivedi2020", "shchur2018",
                                                                            "errica2020")
    assert "init_lr" in P1.training_keys and "learning_rate" in P2.training_keys and "l2" in P3.training_keys
    for protocol in (P1, P2, P3):
        assert set(protocol.training_defaults) <= set(protocol.training_keys)


# ------------------------------------------------------------------------------------------------- key ownership


def test_a_preset_of_another_protocol_contributes_its_architecture_only():
    preset = get_preset("TUs_graph_classification_GatedGCN_ENZYMES_100k")
    config = run_config("TUs_graph_classification_GatedGCN_ENZYMES_100k", {"batch_size": 64},
                        protocol="fair-comparison")
    assert config["model"] == "GatedGCN" and config["variant"] == "dwivedi2020"
    for key, value in preset["net_params"].items():  # architecture: the preset's
        assert config[key] == value
    assert not set(preset["params"]) - {"batch_size", "epochs"} & set(config)  # no init_lr, seed, max_time, ...
    assert config["batch_size"] == 64  # training: the suite's set, then the protocol's defaults
    assert {k: config[k] for k in ("learning_rate", "epochs", "patience", "l2")} == {
        k: P3.training_defaults[k] for k in ("learning_rate", "epochs", "patience", "l2")}

    pitfalls = run_config("pitfalls_GCN", protocol="benchmarking-gnns")
    assert pitfalls == {**P1.training_defaults, "model": "GCN", "variant": "shchur2018", "hidden_size": 64,
                        "dropout_prob": 0.8, "gcn_self_loops": False}  # learning_rate, weight_decay: not the model's

    p1_under_p2 = run_config("WikiCS_node_classification_GCN_100k", {"learning_rate": 0.005}, protocol="pitfalls")
    assert p1_under_p2["learning_rate"] == 0.005 and p1_under_p2["num_epochs"] == 100_000
    assert p1_under_p2["weight_decay"] == P2.training_defaults["weight_decay"]
    assert p1_under_p2["L"] == get_preset("WikiCS_node_classification_GCN_100k")["net_params"]["L"]


def test_own_presets_resolve_as_before_and_name_no_variant():
    config = run_config("SBMs_node_clustering_GCN_PATTERN_100k")
    assert "variant" not in config and config["init_lr"] == 0.001
    assert "variant" not in run_config("fair_GIN", protocol="fair-comparison")
    assert "variant" not in run_config("pitfalls_GAT")
    explicit = run_config("SBMs_node_clustering_GCN_PATTERN_100k", {"variant": "dwivedi2020"})
    assert explicit == config  # the protocol's own variant is left out (run configs and their hashes unchanged)


def test_a_grid_preset_under_a_protocol_without_model_selection_needs_its_dimensions_fixed():
    with pytest.raises(ConfigError) as err:
        run_config("fair_GIN", protocol="benchmarking-gnns", where="m")
    assert str(err.value) == ("m: preset fair_GIN is a grid of protocol fair-comparison; protocol benchmarking-gnns "
                              "trains one configuration: fix hidden_units, train_eps, aggregation, dropout with set")
    fixed = run_config("fair_GIN", {"hidden_units": [32, 32], "train_eps": True, "aggregation": "sum",
                                    "dropout": 0.5, "init_lr": 0.01}, protocol="benchmarking-gnns")
    assert fixed["variant"] == "errica2020" and fixed["hidden_units"] == [32, 32] and fixed["init_lr"] == 0.01
    assert fixed["dropout_layer0_at_eval"] is True  # the preset's fixed architecture value
    assert "batch_size" in fixed and fixed["batch_size"] == P1.training_defaults["batch_size"]  # not the grid's


def test_a_model_of_another_zoo_without_a_preset_gets_the_protocols_training_defaults():
    config = run_config(None, {"model": "GatedGCN", "L": 2, "hidden_dim": 8, "out_dim": 8, "residual": True,
                               "readout": "mean", "batch_norm": True, "dropout": 0.0}, protocol="fair-comparison")
    assert config["variant"] == "dwivedi2020" and config["epochs"] == P3.training_defaults["epochs"]
    with pytest.raises(ConfigError, match="unknown config key 'init_lr'"):  # a P1 training key under P3
        run_config("TUs_graph_classification_GIN_ENZYMES_100k", {"init_lr": 0.1}, protocol="fair-comparison")


# ------------------------------------------------------------------------------------------------- suites


def suite_with(dataset: str, block: dict) -> dict:
    config = copy.deepcopy(DEFAULT)
    config["benchmarks"][dataset] = block
    return config


def test_a_suite_runs_the_benchmarks_models_under_fair_comparison():
    block = {**DEFAULT["benchmarks"]["GRAPH-FAMILIES"],
             "models": {"GIN": "TUs_graph_classification_GIN_ENZYMES_100k",
                        "GatedGCN": {"preset": "TUs_graph_classification_GatedGCN_ENZYMES_100k",
                                     "grid": {"learning_rate": [0.01, 0.001]}}}}
    benchmark = load_suite(suite_with("GRAPH-FAMILIES", block)).benchmarks["GRAPH-FAMILIES"]
    assert [c["learning_rate"] for c in benchmark.grids["GatedGCN"]] == [0.01, 0.001]
    gin = benchmark.grids["GIN"][0]
    suite_epochs = DEFAULT["benchmarks"]["GRAPH-FAMILIES"]["set"]["epochs"]  # the suite's set, the preset's L
    assert gin["variant"] == "dwivedi2020" and gin["epochs"] == suite_epochs and gin["L"] == 4


def test_a_suite_runs_the_benchmarks_models_under_pitfalls():
    block = {**DEFAULT["benchmarks"]["CSBM"],
             "models": {"GCN": "pitfalls_GCN", "GCN-P1": "WikiCS_node_classification_GCN_100k",
                        "GAT-P1": "WikiCS_node_classification_GAT_100k",
                        "GatedGCN-P1": "SBMs_node_clustering_GatedGCN_PATTERN_100k"}}
    benchmark = load_suite(suite_with("CSBM", block)).benchmarks["CSBM"]
    assert benchmark.models["GCN-P1"].config["variant"] == "dwivedi2020"
    assert "variant" not in benchmark.models["GCN"].config
    assert not model_info(benchmark.models["GatedGCN-P1"].config, "shchur2018").has_stacked


def test_a_suite_runs_errica_gin_under_benchmarking_gnns():
    block = {"seeds": [1], "set": {"epochs": 2},
             "models": {"fair-GIN": {"preset": "fair_GIN", "set": {"hidden_units": [32, 32], "train_eps": False,
                                                                   "aggregation": "sum", "dropout": 0.0}}}}
    suite = load_suite(suite_with("GRAPH-FAMILIES", block))
    config = suite.run_config("GRAPH-FAMILIES", "fair-GIN", 1)
    assert config["variant"] == "errica2020" and config["init_lr"] == 0.001 and config["epochs"] == 2


@pytest.mark.parametrize(("dataset", "block", "message"), [
    ("GRAPH-FAMILIES", {"seeds": [1], "models": {"GIN": "fair_GIN"}},
     "benchmarks.GRAPH-FAMILIES.models.GIN: preset fair_GIN is a grid of protocol fair-comparison; protocol "
     "benchmarking-gnns trains one configuration: fix hidden_units, train_eps, aggregation, dropout with set"),
    ("CSBM", {"protocol": "pitfalls", "models": {"WL": "SBMs_node_clustering_3WLGNN_PATTERN_100k"}},
     "benchmarks.CSBM.models.WL: model 3WLGNN builds a dense n×n tensor per graph; dataset CSBM is one graph"),
    ("GRAPH-FAMILIES", {"protocol": "fair-comparison", "models": {"GCN": "pitfalls_GCN"}},
     "benchmarks.GRAPH-FAMILIES.models.GCN: model GCN (shchur2018) cannot do graph_classification (dataset "
     "GRAPH-FAMILIES); it supports node_classification"),
    ("GRAPH-FAMILIES", {"seeds": [1], "models": {"GCN": "pitfalls_GCN"}},
     "benchmarks.GRAPH-FAMILIES.models.GCN: model GCN (shchur2018) cannot do graph_classification"),
    ("PATTERN", {"seeds": [1], "models": {"GCN": "pitfalls_GCN"}},
     "benchmarks.PATTERN.models.GCN: model GCN (shchur2018) is bound to one graph with node labels, but dataset "
     "PATTERN has"),
    ("GRAPH-FAMILIES", {"protocol": "fair-comparison", "models": {"GCN": "CSL_graph_classification_GCN_CSL_PE_100k"}},
     "benchmarks.GRAPH-FAMILIES.models.GCN: model GCN (dwivedi2020): pos_enc needs positional encodings, which this "
     "protocol does not compute; set pos_enc: false"),
    ("CSBM", {"protocol": "pitfalls", "models": {"GIN": {"model": "GIN"}}},
     "benchmarks.CSBM.models.GIN: model GIN exists in several zoos (dwivedi2020, errica2020); set variant"),
])
def test_combinations_that_cannot_run_are_refused_in_one_line_before_anything_runs(dataset, block, message):
    with pytest.raises(ConfigError) as err:
        load_suite(suite_with(dataset, block))
    text = str(err.value)
    assert message in text and "\n" not in text, text


def test_check_fits_refuses_errica_classifiers_without_continuous_features_and_weightless_models():
    meta = describe_dataset("CSL")  # one categorical node feature
    with pytest.raises(ConfigError, match="reads continuous node features, but dataset CSL has categorical"):
        check_fits({"model": "DGCNN"}, meta, default_variant="errica2020")
    with pytest.raises(ConfigError, match="model LabelProp has no weights: it runs only under its own paper's"):
        check_buildable(run_config("pitfalls_LabelProp", protocol="benchmarking-gnns"), describe_dataset("WikiCS"))


# ------------------------------------------------------------------------------------------------- the contract


def test_a_benchmark_model_built_for_a_fair_comparison_dataset_gives_graph_logits():
    meta = graph_classification_meta()
    config = run_config("TUs_graph_classification_GatedGCN_ENZYMES_100k", protocol="fair-comparison")
    model = build_model(config, ModelData(meta, np.full(5, 6)), default_variant="errica2020").eval()
    columns, batch = continuous_batch()
    assert model.aux_loss == 0.0 and model.own_readout is False
    assert model(batch).shape == (5, 6)


def test_an_errica_classifier_built_for_a_benchmark_dataset_gives_graph_logits():
    meta = graph_classification_meta()
    config = run_config("fair_DGCNN", {"learning_rate": 0.001, "num_layers": 2, "embedding_dim": 32, "k": 0.6,
                                       "early_stopping": "loss"}, protocol="fair-comparison")
    columns, batch = continuous_batch()
    p1 = run_config("fair_DGCNN", {"num_layers": 2, "embedding_dim": 32, "k": 0.6}, protocol="benchmarking-gnns")
    for cfg, default in ((config, "errica2020"), (p1, "dwivedi2020")):
        model = build_model(cfg, ModelData(meta, columns.num_nodes), default_variant=default).eval()
        assert model.own_readout is True and model(batch).shape == (5, 6)
    with pytest.raises(ConfigError, match="needs the node count of every graph"):
        build_model(p1, meta)


def test_ecc_is_prepared_from_the_store_it_is_built_with():
    from gnnbench.data.batching import model_dtypes
    from gnnbench.data.store import GraphStore

    columns, batch = continuous_batch()
    store = model_dtypes(GraphStore.from_columns(columns))
    config = run_config("fair_ECC", {"learning_rate": 0.1, "num_layers": 1, "dim_embedding": 32, "dropout": 0.05,
                                     "early_stopping": "loss"}, protocol="fair-comparison")
    model = build_model(config, ModelData(graph_classification_meta(), store=store), default_variant="errica2020")
    batch.graph_ids = torch.arange(5)
    assert model.eval()(batch).shape == (5, 6)


def test_the_single_form_of_a_stacked_model_is_the_stacked_model_with_one_initialisation():
    torch.manual_seed(0)
    n, width, classes = 7, 5, 3
    edge_index = torch.tensor([[0, 1, 1, 2, 3, 4, 5, 6], [1, 0, 2, 1, 4, 3, 6, 5]])
    graph = NodeGraph(n, edge_index, torch.rand(n, width), classes)
    config = run_config("pitfalls_GAT")
    single = build_model(config, ModelData(describe_dataset("CORA"), graph=graph), default_variant="shchur2018",
                         seed=11).eval()
    stacked = build_stacked(config, graph, [11]).eval()
    assert isinstance(single, SingleStacked) and single.aux_loss == 0.0
    batch = type("Batch", (), {"num_nodes": n})()
    assert torch.equal(single(batch), stacked(None, False)[0])  # same weights from the same seed
    assert single(batch).shape == (n, classes)
    assert count_parameters(single) == count_stacked_parameters(stacked)
    assert float(single.l2_penalty().detach()) == pytest.approx(float(stacked.l2_penalty()[0].detach()))


def test_parameter_counts_through_the_registry_match_the_presets():
    from gnnbench.config.presets import all_presets, preset_protocol

    checked = 0
    for name, preset in all_presets().items():
        if preset_protocol(preset) == "pitfalls" and "total_params" in preset:
            protocol = get_protocol(preset_protocol(preset))
            count = num_parameters(run_config(name), describe_dataset(preset["dataset"]),
                                   default_variant=protocol.default_variant)
            assert count == preset["total_params"], name
            checked += 1
    assert checked == 3  # GCN 92,231 and the two label propagations (0)
    name = "molecules_graph_regression_GraphSage_ZINC_100k"
    assert num_parameters(run_config(name), describe_dataset("ZINC")) == get_preset(name)["total_params"]


# ------------------------------------------------------------------------------------------------- job side


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    """A 60-graph graph_families dataset (degree features) with a 3-fold stratified split."""
    from gnnbench.pipeline import generate_dataset, make_split_file

    root = tmp_path_factory.mktemp("families")
    generate_dataset("graph_families", "GF", {"num_graphs": 60}, 1, root / "ds")
    make_split_file(root / "ds", "stratified_kfold", {"folds": 3, "val_fraction": 0.1, "seed": 0}, root / "s.json")
    return root


def test_the_benchmarks_gated_gcn_trains_in_fair_comparisons_trainer(families, tmp_path):
    import pyarrow.parquet as pq


    config = run_config("TUs_graph_classification_GatedGCN_ENZYMES_100k",
                        {"L": 2, "hidden_dim": 8, "out_dim": 8, "epochs": 2, "batch_size": 16},
                        protocol="fair-comparison")
    out = tmp_path / "inner" / "part0.parquet"
    fc_train.run_inner(dataset_dir=families / "ds", splits_path=families / "s.json", fold=0, configs=[config],
                 positions=[0], seed=1, out=out, device="cpu")
    (row,) = pq.read_table(out).to_pylist()
    assert row["epochs"] == 2 and 0 <= row["val_accuracy"] <= 100
    assert fc_grid.num_layers(config) == 2


def test_erricas_gin_trains_in_the_benchmarks_trainer(families, tmp_path):
    from gnnbench.protocols.benchmarking_gnns.train import train

    config = run_config("fair_GIN", {"hidden_units": [8, 8], "train_eps": False, "aggregation": "sum",
                                     "dropout": 0.0, "epochs": 1, "batch_size": 16, "seed": 1},
                        protocol="benchmarking-gnns")
    metrics = train(dataset_dir=families / "ds", splits_path=families / "s.json", fold=0, config=config,
                    out_dir=tmp_path / "run", threads=1)
    expected = num_parameters(config, ModelData(describe_dataset_dir(families / "ds"), np.full(60, 10)),
                              default_variant="dwivedi2020")
    assert metrics["epochs"] == 1 and metrics["num_params"] == expected


def describe_dataset_dir(path):
    from gnnbench.data.meta import read_meta

    return read_meta(path)


def test_a_stacked_models_single_form_is_bound_to_the_one_graph_of_the_store():
    from gnnbench.data.batching import model_dtypes
    from gnnbench.data.store import GraphStore

    columns = labelled(random_graphs(1, seed=5, min_nodes=30, max_nodes=30), "node_classification", 3)
    rng = np.random.default_rng(1)
    columns.node["x"] = rng.random((30, 4)).astype(np.float32)
    store = model_dtypes(GraphStore.from_columns(columns))
    meta = DatasetMeta(name="one-graph", task="node_classification", loss="cross_entropy", metric="accuracy",
                       num_outputs=3, num_graphs=1, node_features=FeatureSpec("continuous", 4), edge_features=None,
                       pe_usage="add", split_sizes=None)
    torch.manual_seed(0)
    model = build_model(run_config("pitfalls_MoNet"), ModelData(meta, store=store), default_variant="shchur2018")
    assert model.eval()(one_batch(columns)).shape == (30, 3)
    many = DatasetMeta(name="many-graphs", task="node_classification", loss="cross_entropy", metric="accuracy",
                       num_outputs=3, num_graphs=5, node_features=FeatureSpec("continuous", 4), edge_features=None,
                       pe_usage="add", split_sizes=None)
    with pytest.raises(ConfigError, match="bound to one graph with node labels, but dataset many-graphs has 5"):
        check_fits(run_config("pitfalls_MoNet"), many, default_variant="shchur2018")
