"""The three papers whose zoos and protocols gnnbench reproduces, by key, and the configuration keys of each zoo.

A leaf: every layer names a paper by these keys (a model's ``variant``, a split file's ``source``, a protocol's zoo)
without importing the models or the protocols. ``PLUGIN`` is the variant of a model from outside the package.
"""

from __future__ import annotations

DWIVEDI2020, SHCHUR2018, ERRICA2020 = "dwivedi2020", "shchur2018", "errica2020"
ZOOS = {DWIVEDI2020: "Dwivedi et al. 2020, Benchmarking Graph Neural Networks",
        SHCHUR2018: "Shchur et al. 2018, Pitfalls of Graph Neural Network Evaluation",
        ERRICA2020: "Errica et al. 2020, A Fair Comparison of Graph Neural Networks for Graph Classification"}

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
ARCHITECTURE_KEYS: dict[str, dict[str, type | tuple]] = {
    DWIVEDI2020: DWIVEDI2020_KEYS, SHCHUR2018: SHCHUR2018_KEYS, ERRICA2020: ERRICA2020_KEYS}
MODEL_KEYS: dict[str, type] = {"model": str, "variant": str}  # every run config's

PLUGIN = "plugin"  # the variant of models from outside the package (gnnbench.models.plugins)
