"""MF (COLLAB matrix factorisation): published total, embedding lookup and pair scores, task refusal."""

from __future__ import annotations

import pytest
import torch
from conftest import meta_for, one_batch, published_rows, random_graphs, with_pairs

from gnnbench.config.presets import all_presets, run_config
from gnnbench.data.catalog import describe_dataset
from gnnbench.errors import ConfigError
from gnnbench.models.build import build_model, count_parameters
from gnnbench.training.losses import get_loss

SMALL = dict(model="MF", L=0, hidden_dim=4, out_dim=4, num_embs=200)


@pytest.mark.parametrize(("preset", "overrides", "total"), published_rows("MF"), ids=lambda v: str(v))
def test_parameter_count_equals_published(preset, overrides, total):
    meta = describe_dataset(all_presets()[preset]["dataset"])
    model = build_model(run_config(preset, overrides), meta)
    assert count_parameters(model) == total == 60_546_561
    assert tuple(model.architecture.emb.weight.shape) == (235_868, 256)


def test_node_embeddings_are_table_rows_by_node_id_and_pairs_are_scored_by_the_mlp_readout():
    torch.manual_seed(0)
    model = build_model(SMALL, meta_for("link_prediction", 1)).eval()
    assert model.node_encoder is None and model.edge_encoder is None  # own input: no encoders
    batch = with_pairs(one_batch(random_graphs(3, seed=1)))
    table = model.architecture.emb.weight
    rep = model.architecture(None, None, batch)
    torch.testing.assert_close(rep.nodes, table[:batch.num_nodes])
    mlp = model.head.mlp
    scores = model(batch)
    with torch.no_grad():
        for k, (u, v) in enumerate(batch.pairs.t().tolist()):
            x = torch.cat([table[u], table[v]])  # node id i ↦ row i
            for layer in mlp.layers:
                x = torch.relu(layer(x))
            torch.testing.assert_close(scores[k], mlp.out(x)[0])
    get_loss("link_bce")(scores, batch).backward()
    assert table.grad[batch.num_nodes:].abs().sum() == 0  # rows of absent node ids are untouched
    assert table.grad[:batch.num_nodes].abs().sum() > 0


@pytest.mark.parametrize("task", ["node_classification", "graph_classification", "graph_regression",
                                  "edge_classification", "multitask_regression"])
def test_tasks_other_than_link_prediction_are_refused_with_a_reason(task):
    with pytest.raises(ConfigError, match="MF cannot do .* one embedding per node id"):
        build_model(SMALL, meta_for(task))


def test_a_batch_larger_than_the_table_is_refused():
    model = build_model({**SMALL, "num_embs": 5}, meta_for("link_prediction", 1))
    batch = with_pairs(one_batch(random_graphs(3, seed=1, min_nodes=4)))
    with pytest.raises(ValueError, match="num_embs"):
        model(batch)
