"""Workflow suite configuration: resolution of the default suite and one-line errors for bad configs."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from gnnbench.config.presets import get_preset, run_config
from gnnbench.errors import ConfigError
from gnnbench.suite import load_suite, load_suite_file

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
    assert suite.table_files()[-14:] == ["results/plots/CSBM.png", "results/plots/CSBM.svg"] + [
        f"results/tables/GRAPH-FAMILIES{part}.{ext}" for part in ("", "_folds") for ext in ("csv", "md", "parquet")] + [
        "results/tables/pitfalls.csv", "results/tables/pitfalls.md", "results/tables/pitfalls.parquet"] + [
        f"results/tables/critical_difference_benchmarking-gnns.{ext}" for ext in ("csv", "md", "parquet")]
    # PATTERN and MNIST-digits share MLP, GCN and GIN (CSL has GCN only of them): compared over those two datasets
    comparison = suite.critical_difference()["benchmarking-gnns"]
    assert list(suite.critical_difference()) == ["benchmarking-gnns"]
    assert (comparison["models"], comparison["datasets"]) == (["GCN", "MLP", "GIN"], ["PATTERN", "MNIST-digits"])
    assert comparison["records"] == [*suite.benchmarks["PATTERN"].record_files(),
                                     *suite.benchmarks["MNIST-digits"].record_files()]
    families = suite.benchmarks["GRAPH-FAMILIES"]  # the fair-comparison block: 5 outer folds, tiny grids
    assert families.protocol == "fair-comparison" and families.folds == [0, 1, 2, 3, 4] and families.final_runs == 1
    assert {m: len(g) for m, g in families.grids.items()} == {"Baseline": 2, "GIN": 4}
    assert {c["early_stopping"] for c in families.grids["GIN"]} == {"accuracy", "loss"}
    # every benchmark has two or more models: each gets its paired-significance table
    assert len(suite.significance_files()) == 3 * len(suite.benchmarks) == 15


def test_the_schema_the_errors_name_is_the_one_the_package_checks_with():
    """Every schema error names workflow/schemas/config.schema.yaml; it is a link to the package's schema (a move of
    the package's file once left it dangling)."""
    from gnnbench.suite import SCHEMA_PATH

    named = REPO_ROOT / "workflow" / "schemas" / "config.schema.yaml"
    assert named.resolve() == SCHEMA_PATH.resolve()
    assert named.read_text() == SCHEMA_PATH.read_text()


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
     "benchmarks.CSL.models.GCN: model: unknown model 'GNN'; choose one of MLP, GCN, GraphSAGE, GAT, MoNet, GIN"),
    ("benchmarks.CSL.models.MF", {"preset": "COLLAB_edge_classification_MF"},
     "benchmarks.CSL.models.MF: model MF cannot do graph_classification (dataset CSL)"),
    ("benchmarks.CSL.models.GIN", {"model": "GIN", "budget": 0}, "benchmarks.CSL.models.GIN.budget"),
    ("benchmarks.CSL.models.GIN", {"budget": 10000}, "a budget needs the model"),
    ("datasets.PATTERN.split", {"scheme": "stratified_kfold"},
     "datasets.PATTERN.split.scheme: stratified_kfold needs graph labels"),
    ("datasets.CSL.split", {"scheme": "given"}, "datasets.CSL.split.scheme: dataset CSL comes without a split"),
    ("datasets.CSL.split", {"protocol": "given"}, "datasets.CSL.split.scheme: dataset CSL comes without a split"),
    # released data are named by paper: the protocol's name of old is refused with the paper key to use
    ("datasets.CSL.split", {"scheme": "published", "source": "benchmarking-gnns"},
     "datasets.CSL.split.source: 'benchmarking-gnns' was renamed: use source: dwivedi2020"),
    ("datasets.CSL.split", {"scheme": "published", "source": "fair-comparison"},
     "datasets.CSL.split.source: 'fair-comparison' was renamed: use source: errica2020"),
    ("datasets.CSL.split", {"scheme": "published", "source": "pitfalls"},  # Shchur et al. released no split files
     "datasets.CSL.split.source: unknown published split 'pitfalls'; choose one of errica2020, dwivedi2020"),
    ("datasets.CSL.split", {"scheme": "published", "source": "errica2020"},
     "datasets.CSL.split.scheme: no errica2020 split was published for dataset CSL"),
    ("datasets.CSL.split", {"scheme": "random_per_class"},
     "datasets.CSL.split: protocol benchmarking-gnns evaluates on split schemes given, stratified_kfold, published, "
     "file, but dataset "
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
    ("benchmarks.CSL.seeds_per_job", 0, "benchmarks.CSL.seeds_per_job: 0 is less than the minimum of 1"),
    ("benchmarks.CSBM.seeds_per_job", 2, "benchmarks.CSBM.seeds_per_job: not a setting of protocol pitfalls"),
    ("benchmarks.GRAPH-FAMILIES.seeds_per_job", 2,
     "benchmarks.GRAPH-FAMILIES.seeds_per_job: not a setting of protocol fair-comparison"),
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


# ------------------------------------------------------------------ seeds, hyper-parameter ranges, labels, YAML keys

SEED_RANGE = "a seed must be an integer from 0 to 4294967295 (2**32 - 1), got"
OUT_OF_RANGE_SEEDS = [
    ("benchmarks.CSL.seeds", [99999999999999999999], f"benchmarks.CSL.seeds.0: {SEED_RANGE} 99999999999999999999"),
    ("benchmarks.CSL.seeds", [14, 2**32], f"benchmarks.CSL.seeds.1: {SEED_RANGE} 4294967296"),
    ("benchmarks.CSL.seeds", [-1], f"benchmarks.CSL.seeds.0: {SEED_RANGE} -1"),
    ("benchmarks.CSL.models.GCN", {"preset": "CSL_graph_classification_GCN_CSL_100k", "seeds": [2**32]},
     f"benchmarks.CSL.models.GCN.seeds.0: {SEED_RANGE} 4294967296"),
    ("datasets.CSL.seed", 2**32, f"datasets.CSL.seed: {SEED_RANGE} 4294967296"),
    ("datasets.CSL.split.seed", 2**40, f"datasets.CSL.split.seed: {SEED_RANGE} 1099511627776"),
    ("benchmarks.CSBM.seed", 2**32, f"benchmarks.CSBM.seed: {SEED_RANGE} 4294967296"),  # pitfalls
    ("benchmarks.GRAPH-FAMILIES.seed", 2**32, f"benchmarks.GRAPH-FAMILIES.seed: {SEED_RANGE} 4294967296"),
]


@pytest.mark.parametrize(("path", "value", "message"), OUT_OF_RANGE_SEEDS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(OUT_OF_RANGE_SEEDS)])
def test_seeds_outside_32_bits_are_refused_at_load(path, value, message):
    with pytest.raises(ConfigError) as err:
        load_suite(with_change(path, value))
    assert str(err.value) == f"{message}; fix it (schema: workflow/schemas/config.schema.yaml)"


def test_the_largest_32_bit_seed_is_accepted():
    config = with_change("benchmarks.CSL.seeds", [0, 2**32 - 1])
    config["datasets"]["CSL"]["seed"] = 2**32 - 1
    assert {run["seed"] for run in load_suite(config).runs("CSL")} == {0, 2**32 - 1}


BAD_HYPERPARAMETERS = [  # key, value, what the message says about it
    ("init_lr", float("nan"), "init_lr must be a finite number, got nan"),
    ("init_lr", float("inf"), "init_lr must be a finite number, got inf"),
    ("init_lr", 0, "init_lr must be positive, got 0.0"),
    ("init_lr", -0.001, "init_lr must be positive, got -0.001"),
    ("lr_reduce_factor", 2, "lr_reduce_factor must be in (0, 1), got 2.0"),
    ("lr_reduce_factor", 1, "lr_reduce_factor must be in (0, 1), got 1.0"),
    ("lr_reduce_factor", 0, "lr_reduce_factor must be in (0, 1), got 0.0"),
    ("lr_reduce_factor", float("nan"), "lr_reduce_factor must be a finite number, got nan"),
    ("min_lr", float("nan"), "min_lr must be a finite number, got nan"),
    ("min_lr", -1e-5, "min_lr must not be negative, got -1e-05"),
    ("weight_decay", -0.1, "weight_decay must not be negative, got -0.1"),
    ("weight_decay", float("inf"), "weight_decay must be a finite number, got inf"),
    ("epochs", 0, "epochs must be at least 1, got 0"),
    ("batch_size", -4, "batch_size must be at least 1, got -4"),
    ("lr_schedule_patience", -1, "lr_schedule_patience must not be negative, got -1"),
    ("max_time", 0, "max_time must be positive, got 0.0"),
    ("max_time", float("nan"), "max_time must be a finite number, got nan"),
    ("dropout", float("nan"), "dropout must be a finite number, got nan"),
    ("seed", 2**32, f"{SEED_RANGE} 4294967296"),
]


@pytest.mark.parametrize(("key", "value", "message"), BAD_HYPERPARAMETERS,
                         ids=[f"{k}={v}" for k, v, _ in BAD_HYPERPARAMETERS])
def test_training_hyperparameters_out_of_range_are_refused(key, value, message):
    with pytest.raises(ConfigError) as err:  # a benchmark's `set:` (applied to each model, which the key names)
        load_suite(with_change(f"benchmarks.CSL.set.{key}", value))
    assert str(err.value).startswith(f"benchmarks.CSL.models.GCN.{key}: {message}; "), str(err.value)
    with pytest.raises(ConfigError) as err:  # `gnnbench train --set` / `params --set`
        run_config("CSL_graph_classification_GCN_CSL_100k", {key: str(value)}, where="--set")
    assert str(err.value).startswith(f"--set.{key}: {message}; "), str(err.value)


@pytest.mark.parametrize(("path", "value", "message"), [
    ("benchmarks.CSBM.models.GCN", {"preset": "pitfalls_GCN", "set": {"learning_rate": float("nan")}},
     "benchmarks.CSBM.models.GCN.learning_rate: learning_rate must be a finite number, got nan"),
    ("benchmarks.CSBM.models.GCN", {"preset": "pitfalls_GCN", "set": {"learning_rate": 0}},
     "benchmarks.CSBM.models.GCN.learning_rate: learning_rate must be positive, got 0.0"),
    ("benchmarks.GRAPH-FAMILIES.models.Baseline.grid", {"learning_rate": [0.01, float("nan")]},
     "benchmarks.GRAPH-FAMILIES.models.Baseline.grid.learning_rate: learning_rate must be a finite number, got nan"),
    ("benchmarks.GRAPH-FAMILIES.set.scheduler_gamma", 2, "scheduler_gamma must be in (0, 1], got 2.0"),
    ("benchmarks.GRAPH-FAMILIES.set.time_limit_hours", -1, "time_limit_hours must be positive, got -1.0"),
])
def test_other_protocols_hyperparameters_out_of_range_are_refused(path, value, message):
    with pytest.raises(ConfigError) as err:
        load_suite(with_change(path, value))
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_an_infinite_time_limit_means_none():
    config = with_change("benchmarks.CSL.set.max_time", float("inf"))
    assert load_suite(config).run_config("CSL", "GCN", 14)["max_time"] == float("inf")
    assert run_config("CSL_graph_classification_GCN_CSL_100k", {"max_time": "inf"})["max_time"] == float("inf")


def test_every_published_preset_passes_the_value_checks():
    from gnnbench.config.keys import coerce, protocol_types
    from gnnbench.config.presets import all_presets, preset_protocol
    from gnnbench.protocols.registry import get_protocol

    for name, preset in all_presets().items():
        config = run_config(name)
        types = protocol_types(get_protocol(preset_protocol(preset)), config)
        for key, values in (preset.get("grid") or {}).items():
            for value in values:
                coerce(key, value, f"preset {name} grid", types)
        for run in preset.get("runs") or []:
            if isinstance(run, dict):  # how the original scripts ran it: overrides and seeds
                for seed in run.get("seeds", []):
                    run_config(name, {**run.get("set", {}), "seed": seed})


def test_the_layers_below_the_protocols_read_what_the_protocol_objects_say():
    """A protocol's name, zoo, training keys and training defaults are tables of gnnbench.papers (the presets, the
    model registry and the jobs read them there); each protocol object hands on the same tables."""
    from gnnbench.config.keys import protocol_types
    from gnnbench.papers import FOREIGN_TRAINING_DEFAULTS, PROTOCOLS, SHCHUR2018, TRAINING_KEYS, protocol_paper
    from gnnbench.protocols.registry import REGISTRY

    assert sorted(PROTOCOLS.values()) == sorted(REGISTRY)
    for name, protocol in REGISTRY.items():
        assert protocol_paper(name) == protocol.default_variant
        assert protocol.training_keys == TRAINING_KEYS[protocol.default_variant]
        assert protocol.training_defaults == FOREIGN_TRAINING_DEFAULTS[protocol.default_variant]
    types = protocol_types(SHCHUR2018, {"model": "GCN"})  # a job names its protocol by its paper's key
    assert types == protocol_types(REGISTRY["pitfalls"], {"model": "GCN"})
    assert types["num_epochs"] is int and types["hidden_size"] is int and "init_lr" not in types
    with pytest.raises(ConfigError, match="^preset X.protocol: unknown protocol 'pitfall'; choose one of "
                                          "benchmarking-gnns, pitfalls, fair-comparison, heterophily$"):
        protocol_paper("pitfall", "preset X.protocol")


def test_model_labels_and_dataset_names_become_paths_so_their_length_is_capped():
    preset = "CSL_graph_classification_GCN_CSL_100k"
    long = "GCN-" + "".join(map(str, range(60)))[:97]  # 101 characters, 0123456789101112...
    with pytest.raises(ConfigError) as err:
        load_suite(with_change(f"benchmarks.CSL.models.{long}", preset))
    assert str(err.value) == ("benchmarks.CSL.models: name 'GCN-0123456789101112'... is 101 characters long; it "
                              "becomes a folder or file name: use at most 100 characters; fix it (schema: "
                              "workflow/schemas/config.schema.yaml)")
    config = with_change(f"datasets.D{long}", DEFAULT["datasets"]["CSL"])
    with pytest.raises(ConfigError, match=r"^datasets: name 'DGCN-012345678910111'\.\.\. is 102 characters long"):
        load_suite(config)
    assert long[:100] in load_suite(with_change(f"benchmarks.CSL.models.{long[:100]}", preset)).benchmarks[
        "CSL"].models


def test_a_label_snakemake_would_take_for_a_runaway_wildcard_is_refused():
    """Snakemake refuses a wildcard value ending in a piece repeated 20 times (PeriodicWildcardError, several lines
    per job); labels and dataset names are wildcards."""
    preset = "CSL_graph_classification_GCN_CSL_100k"
    with pytest.raises(ConfigError) as err:
        load_suite(with_change("benchmarks.CSL.models.run-" + "01" * 20, preset))
    assert str(err.value) == (f"benchmarks.CSL.models: name '{'run-' + '01' * 18}'... ends in one "
                              "piece repeated 20 times or more, which Snakemake refuses in a wildcard "
                              "(PeriodicWildcardError); shorten the repetition; fix it (schema: "
                              "workflow/schemas/config.schema.yaml)")
    with pytest.raises(ConfigError, match=r"^datasets: name 'AAAAAAAAAAAAAAAAAAAA' ends in one piece repeated"):
        load_suite(with_change("datasets.AAAAAAAAAAAAAAAAAAAA", DEFAULT["datasets"]["CSL"]))
    assert "A" * 19 in load_suite(with_change("benchmarks.CSL.models." + "A" * 19, preset)).benchmarks["CSL"].models


SUITE_WITH_DUPLICATE = """\
datasets:
  CSL: {generator: csl, seed: 2, params: {copies_per_class: 5}}
benchmarks:
  CSL:
    seeds: [1]
    models: {MLP: CSL_graph_classification_MLP_CSL_100k}
    seeds: [2]
"""


def test_a_key_given_twice_in_a_suite_is_refused_naming_file_key_and_lines(tmp_path):
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE_WITH_DUPLICATE)
    with pytest.raises(ConfigError) as err:
        load_suite_file(path)
    assert str(err.value) == (f"config file {path}: key 'seeds' is given twice in one mapping (lines 5 and 7), and "
                              "YAML would silently keep only the last; remove or merge one")
    one_seeds = SUITE_WITH_DUPLICATE.replace("    seeds: [2]\n", "")
    path.write_text(one_seeds.replace("models: {MLP: CSL_graph_classification_MLP_CSL_100k}",
                                      "models: {MLP: CSL_graph_classification_MLP_CSL_100k, "
                                      "MLP: CSL_graph_classification_GCN_CSL_100k}"))
    with pytest.raises(ConfigError, match=r"key 'MLP' is given twice in one mapping \(line 6, columns 14 and 58\)"):
        load_suite_file(path)


def test_a_merge_key_overridden_is_not_a_duplicate(tmp_path):
    path = tmp_path / "suite.yaml"
    path.write_text("_small: &small {epochs: 1, batch_size: 16}\n"
                    "datasets:\n  CSL: {generator: csl, seed: 2, params: {copies_per_class: 5}}\n"
                    "benchmarks:\n  CSL:\n    seeds: [1]\n    set: {<<: *small, epochs: 2}\n"
                    "    models: {MLP: CSL_graph_classification_MLP_CSL_100k}\n")
    config = load_suite_file(path).run_config("CSL", "MLP", 1)
    assert (config["epochs"], config["batch_size"]) == (2, 16)


def test_a_preset_file_with_a_key_given_twice_is_refused(tmp_path):
    from gnnbench.config.presets import all_presets

    (tmp_path / "mine.yaml").write_text("my_GCN:\n  model: GCN\n  params: {epochs: 3, init_lr: 0.001, epochs: 4}\n")
    with pytest.raises(ConfigError) as err:
        all_presets(tmp_path)
    assert str(err.value) == (f"preset file {tmp_path.resolve() / 'mine.yaml'}: key 'epochs' is given twice in one "
                              "mapping (line 3, columns 12 and 39), and YAML would silently keep only the last; "
                              "remove or merge one")
