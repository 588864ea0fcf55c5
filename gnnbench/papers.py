"""The papers whose zoos and protocols gnnbench reproduces, by key, and what each defines as data: the name of
its protocol, its zoo's architecture keys, its protocol's training keys and the training that protocol gives a run.

A leaf: every layer names a paper by these keys (a model's ``variant``, a split file's ``source``, a protocol's zoo)
and reads a paper's keys and settings here, without importing the models or the protocols; the protocol objects
(:mod:`gnnbench.protocols`) take theirs from here too. ``PLUGIN`` is the variant of a model from outside the package.
"""

from __future__ import annotations

from gnnbench.errors import ConfigError

DWIVEDI2020, SHCHUR2018, ERRICA2020 = "dwivedi2020", "shchur2018", "errica2020"
PLATONOV2023 = "platonov2023"
ZOOS = {DWIVEDI2020: "Dwivedi et al. 2020, Benchmarking Graph Neural Networks",
        SHCHUR2018: "Shchur et al. 2018, Pitfalls of Graph Neural Network Evaluation",
        ERRICA2020: "Errica et al. 2020, A Fair Comparison of Graph Neural Networks for Graph Classification",
        PLATONOV2023: "Platonov et al. 2023, A Critical Look at the Evaluation of GNNs under Heterophily"}
# The protocol of each paper (a suite's ``protocol:``, :mod:`gnnbench.protocols`), and the protocol of a benchmark or
# preset that names none: the benchmark's
PROTOCOLS = {DWIVEDI2020: "benchmarking-gnns", SHCHUR2018: "pitfalls", ERRICA2020: "fair-comparison",
             PLATONOV2023: "heterophily"}
DEFAULT_PROTOCOL = PROTOCOLS[DWIVEDI2020]

# Architecture keys of each zoo, with their types (the original configs' keys).
# dwivedi2020: the original JSON's ``net_params`` group.
DWIVEDI2020_KEYS: dict[str, type | tuple] = {
    "L": int, "hidden_dim": int, "out_dim": int, "residual": bool, "readout": str, "batch_norm": bool,
    "layer_norm": bool, "in_feat_dropout": float, "dropout": float, "edge_feat": bool, "pos_enc": bool,
    "pos_enc_dim": int, "n_heads": int, "kernel": int, "pseudo_dim_MoNet": int, "sage_aggregator": str,
    "n_mlp_GIN": int, "learn_eps_GIN": bool, "neighbor_aggr_GIN": str, "radius": int, "depth_of_mlp": int,
    "gated": bool, "self_loop": bool, "layer_type": str, "use_gru": bool, "num_train_data": int, "num_embs": int,
}
# shchur2018: the model keys of gnn-benchmark's config/optimized/*.yaml, plus gnnbench's switches for the released
# code's bugs (gcn_self_loops, maxpool_pads_with_node0); learning_rate and weight_decay are training keys of
# protocol pitfalls (tuned per model there, Table 4).
SHCHUR2018_KEYS: dict[str, type | tuple] = {
    "hidden_size": int, "num_heads": list, "input_dropout_prob": float, "coefficient_dropout_prob": float,
    "dropout_prob": float, "num_kernels": int, "r": int, "aggregator": str, "agg_transform_size": int,
    "gcn_self_loops": bool, "maxpool_pads_with_node0": bool, "prop_type": str, "return_prob": float,
}
# errica2020: the model keys of diningphil/gnn-comparison config_*.yml.
ERRICA2020_KEYS: dict[str, type | tuple] = {
    "hidden_units": (int, list), "train_eps": bool, "aggregation": str, "dropout": float,
    "dropout_layer0_at_eval": bool, "num_layers": int, "dim_embedding": int, "embedding_dim": int, "k": float,
    "dense_dim": int, "gnn_dim_hidden": int, "dim_embedding_MLP": int, "dropout_final": float,
    "laplacian_threshold": float,
}
# platonov2023: the model arguments of yandex-research/heterophilous-graphs train.py; ``input_features`` (which
# inputs the model reads: original, sgc, adjacency, identity) replaces its --use_*_features and
# --do_not_use_original_features flags.
PLATONOV2023_KEYS: dict[str, type | tuple] = {
    "num_layers": int, "hidden_dim": int, "hidden_dim_multiplier": float, "num_heads": int, "normalization": str,
    "dropout": float, "input_features": list[str],
}
ARCHITECTURE_KEYS: dict[str, dict[str, type | tuple]] = {
    DWIVEDI2020: DWIVEDI2020_KEYS, SHCHUR2018: SHCHUR2018_KEYS, ERRICA2020: ERRICA2020_KEYS,
    PLATONOV2023: PLATONOV2023_KEYS}
MODEL_KEYS: dict[str, type] = {"model": str, "variant": str}  # every run config's

# Training keys of each paper's protocol, with their types.
# dwivedi2020 (benchmarking-gnns): the original JSON's ``params`` group, which every run needs, and gnnbench's
# ``dense_schedule`` and ``loss``.
DWIVEDI2020_PARAMS: dict[str, type] = {
    "seed": int, "epochs": int, "batch_size": int, "init_lr": float, "lr_reduce_factor": float,
    "lr_schedule_patience": int, "min_lr": float, "weight_decay": float, "max_time": float,
}
TRAINING_KEYS: dict[str, dict[str, type]] = {
    DWIVEDI2020: {**DWIVEDI2020_PARAMS, "dense_schedule": str, "loss": str},
    # shchur2018 (pitfalls): gnn-benchmark's train.conf.yaml keys, and the per-model learning rate and L2 strength
    SHCHUR2018: {"learning_rate": float, "weight_decay": float, "num_epochs": int, "early_stopping_criterion": str,
                 "early_stopping_tolerance": int, "improvement_tolerance": float, "num_training_runs": int},
    # errica2020 (fair-comparison): Errica's, renamed as docs/protocols/fair-comparison.md says
    ERRICA2020: {"batch_size": int, "learning_rate": float, "l2": float, "optimizer": str, "scheduler": str,
                 "scheduler_step_size": int, "scheduler_gamma": float, "gradient_clipping": float, "epochs": int,
                 "early_stopping": str, "patience": int, "time_limit_hours": float},
    # platonov2023 (heterophily): the released train.py's optimisation arguments (num_warmup_steps unset: the
    # warmup is warmup_proportion of num_steps)
    PLATONOV2023: {"lr": float, "weight_decay": float, "num_steps": int, "num_warmup_steps": int,
                   "warmup_proportion": float},
}
# The training every run of a protocol starts from. shchur2018: config/train.conf.yaml of gnn-benchmark, the
# procedure shared by every model; errica2020: the training keys every run needs (the rest are the model's own,
# checked when it is built).
TRAINING_DEFAULTS: dict[str, dict] = {
    SHCHUR2018: {"num_epochs": 100_000, "early_stopping_criterion": "gnnbench", "early_stopping_tolerance": 50,
                 "improvement_tolerance": 0.0},
    ERRICA2020: {"optimizer": "Adam", "scheduler": "none", "l2": 0.0, "gradient_clipping": 0.0, "patience": 500,
                 "early_stopping": "accuracy", "time_limit_hours": 72.0},
    # platonov2023: train.py's defaults, which every experiment of the paper used (scripts/run_all_experiments.sh
    # sets none of them): AdamW at 3e-5 without weight decay for 1,000 steps, no warmup
    PLATONOV2023: {"lr": 3.0e-5, "weight_decay": 0.0, "num_steps": 1000, "warmup_proportion": 0.0},
}
# The training of a model of another paper's zoo, whose preset gives only the architecture.
FOREIGN_TRAINING_DEFAULTS: dict[str, dict] = {
    # the benchmark's TU graph-classification configs (configs/TUs_graph_classification_*.json, the values most of
    # them share): Adam, init_lr 1e-3, ReduceLROnPlateau factor 0.5 with patience 25, stop below min_lr 1e-6, no
    # weight decay, batch size 20, 1000 epochs, 12 hours
    DWIVEDI2020: {"epochs": 1000, "batch_size": 20, "init_lr": 0.001, "lr_reduce_factor": 0.5,
                  "lr_schedule_patience": 25, "min_lr": 1.0e-6, "weight_decay": 0.0, "max_time": 12.0},
    # train.conf.yaml's procedure with the learning rate and L2 strength of the paper's GCN (Table 4: lr 0.01,
    # λ 0.001), the protocol's reference model
    SHCHUR2018: {**TRAINING_DEFAULTS[SHCHUR2018], "learning_rate": 0.01, "weight_decay": 0.001},
    # the protocol's defaults with the values most of Errica's configs share (batch size 32, 1000 epochs) and
    # learning rate 1e-3 (in the GraphSAGE and DiffPool grids); a suite's `grid` searches more
    ERRICA2020: {**TRAINING_DEFAULTS[ERRICA2020], "batch_size": 32, "learning_rate": 0.001, "epochs": 1000},
    # the one procedure of the paper, which it applied to every model alike
    PLATONOV2023: dict(TRAINING_DEFAULTS[PLATONOV2023]),
}
SELECTS_MODELS = (ERRICA2020,)  # protocols that search a preset's grid; the others train one configuration

PLUGIN = "plugin"  # the variant of models from outside the package (gnnbench.models.plugins)


def protocol_paper(protocol: str, where: str = "protocol") -> str:
    """The key of the paper whose protocol is called ``protocol``; an unknown name is a ConfigError that names
    ``where`` (the suite key or command-line option it came from) and lists the protocols."""
    for paper, name in PROTOCOLS.items():
        if name == protocol:
            return paper
    raise ConfigError(f"{where}: unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS.values())}")


def renamed_error(where: str, key: str, value: object, allowed) -> ConfigError | None:
    """The one-line error for a data-source value (split ``source``, TU ``variant``) spelled the old way — by the
    name of the protocol of the paper that released it — naming the paper key to use instead; None for any other
    value."""
    new = next((paper for paper, name in PROTOCOLS.items() if name == value), None)
    if new is None or new not in allowed:
        return None
    return ConfigError(f"{where}: {value!r} was renamed: use {key}: {new} (data released with a paper are named by "
                       "the paper)")
