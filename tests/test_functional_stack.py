"""R initialisations of any contract model trained as one functional stack (torch.func): each member equals the same
initialisation trained alone by SequentialStep, members stop one by one and leave the stack, models that cannot
be vmapped fall back to SequentialStep, and an interrupted stack or job resumes to identical results."""

from __future__ import annotations

import copy
import logging
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import torch
import torch.nn.functional as F
from test_initialisations import assert_resumes_identically, state_after
from torch import nn
from torch.func import vmap
from torch_geometric.nn import GCNConv

from gnnbench.config.presets import run_config
from gnnbench.models.sparse import SparseAdjacency, bag_mm
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.protocols import pitfalls
from gnnbench.protocols.pitfalls import train as pitfalls_train
from gnnbench.splits import read_splits
from gnnbench.training.engine import fit
from gnnbench.training.functional_stack import FunctionalStackStep, stacked_or_sequential
from gnnbench.training.init_stack import SequentialStep, StackedStep, train_split
from gnnbench.training.preemption import Preempted

SETTINGS = {"weight_decay": 0.001, "criterion": "gnnbench", "max_epochs": 1000, "dropout_seed": 7}
GCN_TRAINING = {"learning_rate": 0.01, "patience": 50}  # the pitfalls protocol's rule, the benchmark GCN's lr
PYG_TRAINING = {"learning_rate": 0.05, "patience": 20}
# the benchmark's GCN layer: bias, then train-mode batch norm. Batch norm removes a constant shift, so the gradient of
# that bias is rounding noise in any training (~1e-7 in float32), which Adam turns into steps of ~lr: the bias and
# the running mean it shifts differ between two trainings that round differently; compared through the outputs.
PRE_BATCH_NORM = ("architecture.layers.0.bias", "architecture.layers.1.bias", "running_mean")


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    """A 200-node CSBM graph (3 classes, 8 features), its first random split and the pitfalls job's whole batch;
    one torch thread, as a pitfalls job runs (these models are too small to gain from more)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("functional_stack")
    generate_dataset("csbm", "CSBM", {"num_nodes": 200, "num_classes": 3, "num_features": 8}, 1, root / "CSBM")
    make_split_file(root / "CSBM", "random_per_class", {"splits": 2, "train_per_class": 10, "val_per_class": 10,
                                                         "seed": 1}, root / "splits.json")
    meta, _, labels = pitfalls_train.load_node_graph(root / "CSBM")
    parts = {p: torch.from_numpy(i) for p, i in read_splits(root / "splits.json", meta).fold(0).items()}
    build, batch = pitfalls_train.whole_graph(root / "CSBM")
    yield SimpleNamespace(root=root, labels=labels, parts=parts, build=build, batch=batch)
    torch.set_num_threads(threads)


def gcn_config(dropout: float) -> dict:
    """The benchmark's GCN (dwivedi2020: batch norm, residual) under the pitfalls protocol, two layers of 16."""
    return run_config("WikiCS_node_classification_GCN_100k", {"L": 2, "hidden_dim": 16, "out_dim": 16,
                                                              "dropout": dropout}, protocol="pitfalls")


class PyGGCN(nn.Module):
    """A user's model written with PyG layers, following the model contract: ``forward(batch)`` → (N, C) logits."""

    def __init__(self, in_channels: int, hidden: int, classes: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.conv1, self.conv2, self.dropout = GCNConv(in_channels, hidden), GCNConv(hidden, classes), dropout

    def forward(self, batch) -> torch.Tensor:
        h = F.relu(self.conv1(F.dropout(batch.x, self.dropout, self.training), batch.edge_index))
        return self.conv2(F.dropout(h, self.dropout, self.training), batch.edge_index)


class PyGGCNOwnL2(PyGGCN):
    """With its own L2 term (on the first layer's weights only), read with each member's weights."""

    def l2_penalty(self) -> torch.Tensor:
        return 0.01 / 2 * self.conv1.lin.weight.square().sum()


def trained(trainer_class, make, graph, seeds, batch=None, **settings):
    """(trainer, result, the models its builds returned) of ``seeds`` initialisations of ``make()`` (on ``batch``,
    default the graph's)."""
    built = []

    def build():
        built.append(make())
        return built[-1]

    batch = graph.batch if batch is None else batch
    trainer = trainer_class(build, batch, graph.labels, graph.parts, init_ids=list(range(len(seeds))),
                            seeds=seeds, **{**SETTINGS, **settings})
    return trainer, train_split(trainer), built


def model_cases(graph, dropout: float):
    gcn = gcn_config(dropout)
    return {"benchmark GCN": (lambda: graph.build(gcn), GCN_TRAINING, [5, 6, 7, 8]),
            "PyG GCNConv": (lambda: PyGGCN(8, 16, 3, 0.5 if dropout else 0.0), PYG_TRAINING, [1, 2, 3, 4]),
            "PyG GCNConv, own L2": (lambda: PyGGCNOwnL2(8, 16, 3, 0.5 if dropout else 0.0), PYG_TRAINING,
                                    [1, 2, 3, 4])}


@pytest.mark.parametrize("dropout", [0.0, 0.35])
@pytest.mark.parametrize("case", ["benchmark GCN", "PyG GCNConv", "PyG GCNConv, own L2"])
def test_a_member_of_the_stack_equals_the_initialisation_trained_alone(graph, case, dropout):
    """Same stop epoch, scored epoch, stop reason and scores as SequentialStep's run of the same initialisation
    (the user's PyG models in float64, the benchmark GCN in float32); tolerances: the restored weights within 1e-4
    of the tensor's scale and losses within 1e-4 (relative); for the benchmark GCN, whose batch-norm gradients round
    differently when batched, 1e-3 and 1e-2, and its
    pre-batch-norm biases compared through the outputs (logits of the restored models within 1e-3). With dropout:
    the same masks (one draw per epoch shared by the members, as SequentialStep reseeds the split's dropout seed
    for every initialisation)."""
    make, training, seeds = model_cases(graph, dropout)[case]
    batch = graph.batch
    if case != "benchmark GCN":
        # the user's models in float64, on a float64 copy of the features: vmapped and one-at-a-time kernels sum in
        # different orders, and in float32 that rounding can tie two epochs' validation losses differently, moving
        # the early stop by an epoch or two on some CPUs. What is compared here is the stacking, not the rounding.
        batch = copy.copy(graph.batch)
        batch.x = batch.x.double()
        make = (lambda make32: lambda: make32().double())(make)
    stack, together, _ = trained(FunctionalStackStep, make, graph, seeds, batch, **training)
    _, alone, models = trained(SequentialStep, make, graph, seeds, batch, **training)
    assert isinstance(stack, FunctionalStackStep)
    keys = ("init", "epochs", "best_epoch", "stop_reason", "status", "train_accuracy", "val_accuracy",
            "test_accuracy")
    tolerance, loss_tolerance = (1e-3, 1e-2) if case == "benchmark GCN" else (1e-4, 1e-4)
    for r, (a, b) in enumerate(zip(together.records, alone.records, strict=True)):
        assert {k: a[k] for k in keys} == {k: b[k] for k in keys}
        for part in ("train", "val", "test"):
            assert a[f"{part}_loss"] == pytest.approx(b[f"{part}_loss"], rel=loss_tolerance)
        member, own = stack.member_state(r), models[r].state_dict()
        assert member.keys() == own.keys()
        for name, value in own.items():
            if not any(name.endswith(k) for k in PRE_BATCH_NORM) or case != "benchmark GCN":
                scale = max(float(value.abs().max()), 1.0)
                torch.testing.assert_close(member[name], value, rtol=0, atol=tolerance * scale, msg=name)
        models[r].load_state_dict(member)  # the member's weights in the model trained alone: the same outputs
        models[r].eval()
        with torch.no_grad():
            restored = models[r](batch)
            models[r].load_state_dict(own)
            torch.testing.assert_close(restored, models[r](batch), rtol=0, atol=1e-3)
    epochs = [r["epochs"] for r in together.records]
    assert len(set(epochs)) > 1  # members left the stack at different epochs, the others trained on unchanged
    for a, b in (("init", "init"), ("epoch", "epoch")):  # the same history rows, in another order
        order = np.lexsort((together.history["epoch"], together.history["init"]))
        assert np.array_equal(together.history[a][order], alone.history[b])
    np.testing.assert_allclose(together.history["val_loss"][order], alone.history["val_loss"], rtol=loss_tolerance)


def test_members_stop_one_by_one_and_leave_the_stack(graph):
    """Per-member early stopping (patience on the total validation loss, the best epoch restored): a stopped member's
    rows leave every stacked tensor, so the stack holds exactly the members still training."""
    make, training, seeds = model_cases(graph, 0.0)["benchmark GCN"]
    trainer = FunctionalStackStep(make, graph.batch, graph.labels, graph.parts, init_ids=[0, 1, 2, 3],
                                  seeds=seeds, **{**SETTINGS, **training})
    run, rules = trainer.fit_parts()
    sizes = []

    class EveryEpoch:  # the engine's checkpoint hook: called after the stopped members left the stack
        def due(self) -> bool:
            return True

        def save(self, state: dict) -> None:
            running = len(run.active)
            assert trainer.active.tolist() == run.active
            assert all(t.shape[0] == running for t in (*trainer.params.values(), *trainer.buffers.values()))
            sizes.append(running)

    fit(run, trainer, rules, checkpoint=EveryEpoch())
    assert sizes[0] == 4 and sizes[-1] == 0 and len(set(sizes)) > 2  # several drops, at different epochs
    result = trainer.results(run)
    for record in result.records:
        assert record["stop_reason"] == "early_stopping"
        assert record["epochs"] == record["best_epoch"] + 1 + training["patience"]
        rows = result.history["init"] == record["init"]
        assert result.history["epoch"][rows].tolist() == list(range(record["epochs"]))
        best = result.history["val_loss"][rows][record["best_epoch"]]
        assert best == result.history["val_loss"][rows].min() and record["val_loss"] == pytest.approx(best, rel=1e-5)


class DataDependent(PyGGCN):
    """Python control flow on a weight's value: vmap cannot run it (one branch per member)."""

    def forward(self, batch) -> torch.Tensor:
        logits = super().forward(batch)
        return logits if bool(self.conv2.bias.sum() >= 0) else -logits


class UnreplacedWeights(PyGGCN):
    """Reads a weight through a reference functional_call does not replace: every member would run copy 0's."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self._weights = [self.conv2.lin.weight]

    def forward(self, batch) -> torch.Tensor:
        h = F.relu(self.conv1(batch.x, batch.edge_index))
        return self.conv2(h, batch.edge_index) + h[:, :3] @ self._weights[0][:, :3].t()


@pytest.mark.parametrize(("model", "reason"), [
    (DataDependent, "vmap: RuntimeError"),
    (UnreplacedWeights, "member 1's vmapped outputs differ from its own forward pass"),
])
def test_a_model_that_cannot_be_stacked_trains_one_initialisation_after_another(graph, caplog, model, reason):
    """The dry run fails or its outputs disagree: one log line saying why, and SequentialStep's results."""
    settings = {**SETTINGS, **PYG_TRAINING, "init_ids": [0, 1], "seeds": [1, 2]}
    with caplog.at_level(logging.INFO, logger="gnnbench.training.functional_stack"):
        trainer = stacked_or_sequential(lambda: model(8, 16, 3), graph.batch, graph.labels, graph.parts,
                                        name=f"model {model.__name__}", **settings)
    assert isinstance(trainer, SequentialStep)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and lines[0].startswith(f"model {model.__name__}: initialisations trained one after "
                                                   "another, not stacked") and reason in lines[0]
    result = train_split(trainer)
    direct = train_split(SequentialStep(lambda: model(8, 16, 3), graph.batch, graph.labels, graph.parts,
                                           **settings))
    assert result.records == direct.records  # the failed attempt left nothing behind (weights, random draws)


def test_the_pitfalls_job_picks_the_hand_written_stack_then_the_functional_stack_then_one_after_another(graph,
                                                                                                         caplog):
    _, node_graph, labels = pitfalls_train.load_node_graph(graph.root / "CSBM")
    whole = (graph.build, graph.batch)

    def trainer(preset, **overrides):
        config = {**pitfalls.TRAINING_DEFAULTS, **run_config(preset, overrides, protocol="pitfalls")}
        return pitfalls_train.make_trainer(config, node_graph, labels, graph.parts, 0, 0, [0, 1], whole)

    assert isinstance(trainer("pitfalls_GCN"), StackedStep)  # Shchur's GCN: its own stacked form
    assert isinstance(trainer("WikiCS_node_classification_GCN_100k"), FunctionalStackStep)
    with caplog.at_level(logging.INFO, logger="gnnbench.training.functional_stack"):
        gat = trainer("WikiCS_node_classification_GAT_100k")  # its attention is an autograd.Function without vmap
    assert isinstance(gat, SequentialStep)
    assert "model GAT (dwivedi2020): initialisations trained one after another, not stacked (it uses a " \
           "torch.autograd.Function without a vmap rule)" in caplog.text


def test_a_stack_resumes_mid_way_to_identical_results(graph):
    """Saved after some members left the stack and resumed in a fresh trainer: the same records and history."""
    make, training, seeds = model_cases(graph, 0.35)["benchmark GCN"]

    def fresh():
        return FunctionalStackStep(make, graph.batch, graph.labels, graph.parts, init_ids=[0, 1, 2, 3],
                                      seeds=seeds, **{**SETTINGS, **training})

    assert_resumes_identically(fresh, lambda straight: min(r["epochs"] for r in straight.records) + 3)


def test_a_killed_pitfalls_job_of_a_functional_stack_resumes_from_its_checkpoint(graph, tmp_path, monkeypatch):
    """The benchmark's GCN under the pitfalls protocol, killed mid-split and rerun: the job's checkpoint (read with
    weights_only=True) resumes the functional stack to the results of an uninterrupted job."""
    common = {"dataset_dir": graph.root / "CSBM", "splits_path": graph.root / "splits.json", "splits": [0, 1],
              "config": gcn_config(0.35), "inits": 3, "seed": 5, "threads": 1}
    pitfalls_train.run_chunk(out_dir=tmp_path / "straight", **common)
    straight = pq.read_table(tmp_path / "straight" / "runs.parquet").to_pandas()
    first, second = (straight[straight["split"] == k]["epochs"] for k in (0, 1))
    assert second.min() + 5 < second.max()
    kill_at = first.max() + second.min() + 5  # in split 1, after a member left the stack
    original, calls = FunctionalStackStep.epoch, {"n": 0}

    def dying(self, run, members):
        calls["n"] += 1
        if calls["n"] == kill_at:
            raise Preempted(15)
        return original(self, run, members)

    monkeypatch.setattr("gnnbench.protocols.pitfalls.train.CHECKPOINT_SECONDS", 0.0)
    monkeypatch.setattr(FunctionalStackStep, "epoch", dying)
    with pytest.raises(Preempted):
        pitfalls_train.run_chunk(out_dir=tmp_path / "killed", **common)
    from gnnbench.training.checkpoint import read_checkpoint

    state = read_checkpoint(tmp_path / "killed" / "checkpoint.pt")
    assert [u["split"] for u in state["units"].values()] == [0] and state["current"]["fit"]["kind"] == \
        "functional_stack"
    assert 0 < state["current"]["fit"]["active"].numel() < 3  # saved with members gone from the stack
    monkeypatch.setattr(FunctionalStackStep, "epoch", original)
    pitfalls_train.run_chunk(out_dir=tmp_path / "killed", **common)
    runs = {name: pq.read_table(tmp_path / name / "runs.parquet").to_pandas().drop(columns="seconds")
            for name in ("straight", "killed")}
    pd.testing.assert_frame_equal(runs["killed"], runs["straight"])
    assert pq.read_table(tmp_path / "killed" / "history.parquet").equals(
        pq.read_table(tmp_path / "straight" / "history.parquet"))


def test_sparse_products_under_vmap_equal_one_product_per_member():
    """The vmap rules of the sparse products the benchmark's layers use: a batch of feature matrices through one
    adjacency equals the per-member products, values and gradients."""
    g = torch.Generator().manual_seed(0)
    edge_index = torch.randint(0, 30, (2, 90), generator=g)
    adjacency = SparseAdjacency(edge_index, torch.rand(90, generator=g), 30)
    x = torch.randn(4, 30, 5, generator=g, requires_grad=True)
    for product in (lambda h: bag_mm(adjacency.plan, h), lambda h: adjacency.propagate(h.t()[0])):
        batched = vmap(product)(x)
        looped = torch.stack([product(x[r]) for r in range(4)])
        torch.testing.assert_close(batched, looped)
        weights = torch.randn(batched.shape, generator=g)
        (grad,) = torch.autograd.grad((batched * weights).sum(), x)
        (expected,) = torch.autograd.grad((looped * weights).sum(), x)
        torch.testing.assert_close(grad, expected)


def test_a_checkpoint_of_another_trainer_is_refused(graph):
    make, training, seeds = model_cases(graph, 0.0)["PyG GCNConv"]
    settings = {**SETTINGS, **training, "init_ids": [0, 1], "seeds": seeds[:2]}
    sequential = state_after(SequentialStep(make, graph.batch, graph.labels, graph.parts, **settings), 1)
    stack = FunctionalStackStep(make, graph.batch, graph.labels, graph.parts, **settings)
    with pytest.raises(ValueError, match="not written by a functional stack"):
        stack.load_state_dict(sequential)
