"""The fair-comparison protocol's grid points of one shape trained as one wide stack
(gnnbench.training.stacked_holdout.MemberStack, gnnbench.protocols.fair_comparison.run_inner with ``stack``), and
Errica's GIN with dropout modules: the same masks and results as its functional form.

Member-equals-alone: in float64 with dropout 0 a member of a stack (its own learning rate, weight decay, stopping
rule and patience) equals the same configuration trained alone by ``train_holdout`` on the stack's batch order
(the first member's stream), and a member that stops early leaves the others unchanged."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from gnnbench.config.keys import coerce_all, protocol_types
from gnnbench.data.batching import GraphLoader
from gnnbench.models.graph_classifiers.gin import GIN as GINModel
from gnnbench.models.registry import ERRICA2020, ModelData, build_model, count_parameters
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.protocols import fair_comparison as fc
from gnnbench.training.holdout import train_holdout

GIN = {"model": "GIN", "hidden_units": [8, 8], "train_eps": True, "aggregation": "sum", "dropout": 0.5,
       "dropout_layer0_at_eval": True, "batch_size": 16, "learning_rate": 0.01, "optimizer": "Adam",
       "scheduler": "step", "scheduler_step_size": 3, "scheduler_gamma": 0.5, "l2": 0.0, "gradient_clipping": 0.0,
       "epochs": 6, "patience": 2, "early_stopping": "accuracy", "time_limit_hours": 72.0}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    root = tmp_path_factory.mktemp("gf")
    generate_dataset("graph_families", "GF", {"num_graphs": 60, "features": "degree"}, 1, root / "ds")
    make_split_file(root / "ds", "stratified_kfold", {"folds": 3, "val_fraction": 0.2, "seed": 0}, root / "s.json")
    return root


def _data(families, double=False):
    data = fc._load(families / "ds", families / "s.json")
    if double:
        wide = {k: v.double() if v.is_floating_point() else v for k, v in data.store.node.items()}
        data.store = dataclasses.replace(data.store, node=wide)
    parts = {p: torch.from_numpy(v) for p, v in data.splits.fold(0).items()}
    return data, parts


def _builder(data, parts, config, double=False):
    cfg = coerce_all(config, "config", protocol_types(fc.FairComparison, config))
    model_data = ModelData(data.meta, data.sizes, data.store, train_graphs=parts["train"])

    def build():
        model = build_model(cfg, model_data, default_variant=ERRICA2020)
        return model.double() if double else model

    return cfg, build


# ---------------------------------------------------------------------------------------------- GIN's dropout modules


def _functional_forward(model: GINModel, batch):
    """The forward of Errica's GIN as it was written before its dropouts became modules: ``F.dropout`` with the
    rate as a float, term 0 with ``training or dropout_layer0_at_eval``."""
    from gnnbench.models.gin import NeighbourAggregation

    src, dst = batch.edge_index
    keep = src != dst
    edges = batch.edge_index if bool(keep.all()) else batch.edge_index[:, keep]
    aggregate = NeighbourAggregation(edges, batch.num_nodes, "sum", batch.x.dtype)
    x = model.first_h(batch.x)
    p = model.dropouts[0].p
    out = F.dropout(model._pool(model.linears[0](x), batch), p, model.training or model.dropout_layer0_at_eval)
    for conv, linear in zip(model.convs, model.linears[1:], strict=True):
        x = conv(x, aggregate)
        out = out + F.dropout(linear(model._pool(x, batch)), p, model.training)
    return out


@pytest.mark.parametrize("layer0_at_eval", [True, False])
def test_gin_dropout_modules_draw_the_functional_forms_masks(families, layer0_at_eval):
    data, parts = _data(families)
    cfg, build = _builder(data, parts, {**GIN, "dropout_layer0_at_eval": layer0_at_eval})
    torch.manual_seed(3)
    model = build()
    batch = next(iter(GraphLoader(data.store, parts["train"], 16)))
    for mode in (True, False):
        model.train(mode)
        assert model.dropouts[0].training == (mode or layer0_at_eval)
        assert all(d.training == mode for d in model.dropouts[1:])
        with torch.no_grad():
            torch.manual_seed(5)
            modules = model(batch)
            torch.manual_seed(5)
            functional = _functional_forward(model, batch)
        assert torch.equal(modules, functional)
    model.eval()
    with torch.no_grad():  # the as-run default is stochastic at evaluation, the fixed form is not
        assert torch.equal(model(batch), model(batch)) != layer0_at_eval


@pytest.mark.parametrize("units,train_eps", [([8, 8], True), ([8], False)])
def test_gin_parameter_count_and_state_keys_unchanged(families, units, train_eps):
    data, parts = _data(families)
    cfg, build = _builder(data, parts, {**GIN, "hidden_units": units, "train_eps": train_eps})
    model = build()
    f, c, h, n = data.meta.node_features.size, data.meta.num_outputs, units[0], len(units)
    mlp0 = (f * h + h) + 2 * h + (h * h + h) + 2 * h
    conv = 2 * (h * h + h) + 2 * (2 * h) + (1 if train_eps else 0)
    assert count_parameters(model) == mlp0 + n * conv + (n + 1) * (h * c + c)
    assert not any(k.startswith("dropouts") for k in model.state_dict())  # no new state: old checkpoints load
    assert model.dropout == 0.5


def test_gin_training_run_is_unchanged_by_the_dropout_modules(families, monkeypatch):
    """A whole train_holdout run (dropout in training, term-0 dropout at evaluation) gives the same history with the
    modules as with the functional forward."""
    data, parts = _data(families)
    cfg, build = _builder(data, parts, {**GIN, "epochs": 3, "patience": 10})
    histories = []
    for forward in (GINModel.forward, _functional_forward):
        monkeypatch.setattr(GINModel, "forward", forward)
        torch.manual_seed(7)
        out = train_holdout(build(), data.store, parts, cfg, device=torch.device("cpu"))
        histories.append([{k: v for k, v in row.items() if k != "seconds"} for row in out["history"]])
    assert histories[0] == histories[1]
