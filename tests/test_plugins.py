"""Models from outside the package (gnnbench.models.plugins; docs/model-contract.md): a class named by file, module,
class path or entry point, backbone or full, PyTorch Geometric's BasicGNN models as they are, their parameter counts
and budgets, the one-line refusals before any job runs, and one run of each protocol's trainer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import torch
import yaml
from conftest import labelled, meta_for, one_batch, random_graphs

from gnnbench.config.budget import fit_width
from gnnbench.config.presets import run_config
from gnnbench.data.batching import GraphBatch
from gnnbench.data.catalog import describe_dataset
from gnnbench.data.meta import DatasetMeta, FeatureSpec, read_meta
from gnnbench.errors import ConfigError
from gnnbench.models.adapters import FullModel, in_degree_histogram
from gnnbench.models.build import ModelData, build_model, count_parameters, num_parameters
from gnnbench.models.plugins import parse_spec
from gnnbench.models.registry import model_info, resolve
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.suite import load_suite, load_suite_file

H = 8  # the hidden width of the small models built here
PYG = "torch_geometric.nn.models"
PNA_ARGS = {"aggregators": ["mean", "max"], "scalers": ["identity", "amplification"]}

NETS = '''
import torch
from torch import nn


class TwoHop(nn.Module):
    """A backbone: num_layers times h <- relu(W [h || mean of the in-neighbours' h])."""

    def __init__(self, in_channels: int, hidden_channels: int, num_layers: int = 2, residual: bool = False):
        super().__init__()
        widths = [in_channels] + [hidden_channels] * num_layers
        self.layers = nn.ModuleList(nn.Linear(2 * a, b) for a, b in zip(widths[:-1], widths[1:]))
        self.residual = residual

    def forward(self, x, edge_index):
        src, dst = edge_index
        degree = torch.bincount(dst, minlength=x.shape[0]).clamp(min=1).unsqueeze(-1)
        for layer in self.layers:
            mean = torch.zeros_like(x).index_add_(0, dst, x.index_select(0, src)) / degree
            out = torch.relu(layer(torch.cat([x, mean], dim=-1)))
            x = out + x if self.residual and out.shape == x.shape else out
        return x


class Lazy(nn.Module):
    """A backbone whose input width is found by its first forward (nn.LazyLinear)."""

    def __init__(self, hidden_channels: int):
        super().__init__()
        self.lin = nn.LazyLinear(hidden_channels)

    def forward(self, x, edge_index):
        return torch.relu(self.lin(x))


class MeanPool(nn.Module):
    """A full graph model: mean of Linear(x) per graph, then a linear classifier (or one regression target)."""

    tasks = ("graph_classification", "graph_regression")

    def __init__(self, in_channels: int, num_classes: int, hidden: int = 8):
        super().__init__()
        self.lin = nn.Linear(in_channels, hidden)
        self.out = nn.Linear(hidden, num_classes)

    def forward(self, batch):
        h = torch.relu(self.lin(batch.x))
        total = h.new_zeros(batch.num_graphs, h.shape[1]).index_add_(0, batch.batch, h)
        return self.out(total / torch.bincount(batch.batch, minlength=batch.num_graphs).unsqueeze(-1))
'''

BROKEN = '''
import torch
from torch import nn


class NotAModule:
    pass


def make_model(in_channels):
    return nn.Linear(in_channels, 4)


class WrongForward(nn.Module):
    def __init__(self, in_channels: int):
        super().__init__()
        self.lin = nn.Linear(in_channels, 4)

    def forward(self, x, adj):
        return self.lin(x)


class Flat(nn.Module):
    def __init__(self, in_channels: int):
        super().__init__()
        self.lin = nn.Linear(in_channels, 1)

    def forward(self, x, edge_index):
        return self.lin(x).squeeze(-1)


class Pooled(nn.Module):
    def __init__(self, in_channels: int):
        super().__init__()
        self.lin = nn.Linear(in_channels, 4)

    def forward(self, x, edge_index, batch):
        return torch.zeros(int(batch.max()) + 1, 4).index_add_(0, batch, self.lin(x))


class NodeScores(nn.Module):
    def __init__(self, in_channels: int, num_classes: int):
        super().__init__()
        self.lin = nn.Linear(in_channels, num_classes)

    def forward(self, batch):
        return self.lin(torch.nn.functional.one_hot(batch.x, self.lin.in_features).float())


class NodeOnly(nn.Module):
    tasks = ("node_classification",)

    def __init__(self, in_channels: int):
        super().__init__()
        self.lin = nn.Linear(in_channels, 4)

    def forward(self, x, edge_index):
        return self.lin(x)


class Strict(nn.Module):
    def __init__(self, in_channels: int, hidden_channels: int):
        super().__init__()
        self.lin = nn.Linear(in_channels, hidden_channels)

    def forward(self, x, edge_index):
        return self.lin(x)


class Raises(nn.Module):
    def __init__(self, in_channels: int, hidden_channels: int):
        super().__init__()
        if hidden_channels % 2:
            raise ValueError("hidden_channels must be even")
        self.lin = nn.Linear(in_channels, hidden_channels)

    def forward(self, x, edge_index):
        return self.lin(x)


class Crashes(nn.Module):
    def __init__(self, in_channels: int):
        super().__init__()
        self.lin = nn.Linear(in_channels + 1, 4)

    def forward(self, x, edge_index):
        return self.lin(x)
'''


@pytest.fixture(scope="module")
def nets(tmp_path_factory) -> Path:
    """A folder with the plugin file nets.py, a broken.py of wrong models and a package userzoo (module plugins)."""
    root = tmp_path_factory.mktemp("plugins")
    (root / "nets.py").write_text(NETS)
    (root / "broken.py").write_text(BROKEN)
    (root / "fails_on_import.py").write_text("import not_a_module_of_anyone_xyz\n")
    (root / "userzoo").mkdir()
    (root / "userzoo" / "__init__.py").write_text("")
    (root / "userzoo" / "layers.py").write_text(NETS)
    return root


@pytest.fixture
def on_path(nets, monkeypatch):
    monkeypatch.syspath_prepend(str(nets))
    return nets


def csl_suite(models: dict, **block) -> dict:
    return {"datasets": {"CSL": {"generator": "csl", "seed": 1, "split": {"scheme": "stratified_kfold", "folds": 5,
                                                                          "val_fraction": 0.25, "seed": 1}}},
            "benchmarks": {"CSL": {"seeds": [1], "models": models, **block}}}


def continuous_meta(task: str = "graph_classification", width: int = 3, outputs: int = 4) -> DatasetMeta:
    return DatasetMeta(name="test-continuous", task=task, loss="cross_entropy", metric="accuracy",
                       num_outputs=outputs, num_graphs=20, node_features=FeatureSpec("continuous", width),
                       edge_features=None, pe_usage="add", split_sizes=None)


def mlp_readout_params(width: int, outputs: int) -> int:
    """The benchmark's MLPReadout(d, C): d -> d/2 -> d/4 -> C, with biases."""
    half, quarter = width // 2, width // 4
    return width * half + half + half * quarter + quarter + quarter * outputs + outputs


# ------------------------------------------------------------------------------------------------- naming


def test_every_spelling_names_its_class_and_its_kind(nets, on_path):
    file_spec = f"{nets}/nets.py:TwoHop"
    assert parse_spec(file_spec) == ("file", f"{nets}/nets.py", "TwoHop")
    assert parse_spec("userzoo.layers:TwoHop") == ("module", "userzoo.layers", "TwoHop")
    assert parse_spec(f"{PYG}.GCN") == ("module", PYG, "GCN")
    assert parse_spec("entrypoint:MyGNN") == ("entrypoint", "MyGNN", None)
    for spec in (file_spec, "userzoo.layers:TwoHop"):
        v = resolve({"model": spec})
        assert (v.variant, v.kind, v.family, v.load().__name__) == ("plugin", "backbone", spec, "TwoHop")
    full = resolve({"model": f"{nets}/nets.py:MeanPool"})
    assert full.kind == "full" and full.tasks == ("graph_classification", "graph_regression")
    info = model_info({"model": f"{PYG}.GIN"})
    assert (info.variant, info.kind, info.has_stacked, info.own_readout) == ("plugin", "backbone", False, False)
    assert {"in_channels", "hidden_channels", "num_layers", "readout"} <= set(info.architecture_keys)


def test_a_suite_names_a_file_relative_to_the_suite_file_and_runs_hold_its_absolute_path(nets, tmp_path,
                                                                                        monkeypatch):
    folder = tmp_path / "project"
    (folder / "models").mkdir(parents=True)
    (folder / "models" / "my_gnn.py").write_text(NETS)
    (folder / "suite.yaml").write_text(yaml.safe_dump(csl_suite(
        {"Mine": {"model": "models/my_gnn.py:TwoHop", "set": {"hidden_channels": H}}})))
    monkeypatch.chdir(tmp_path)  # another working folder: the path is the suite file's
    suite = load_suite_file(folder / "suite.yaml")
    config = suite.run_config("CSL", "Mine", 1)
    assert config["model"] == f"{(folder / 'models' / 'my_gnn.py').resolve()}:TwoHop"
    assert config["variant"] == "plugin" and config["hidden_channels"] == H
    assert config["init_lr"] == 0.001  # the protocol's training defaults for another paper's models


# ------------------------------------------------------------------------------------------------- entry points


def install_entry_point(root: Path, name: str, module: str, marker: Path) -> None:
    """A distribution on ``root`` (put on sys.path) declaring entry point ``name`` of group gnnbench.models; importing
    its module writes ``marker``."""
    dist = root / f"{module}_dist-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}-dist\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[gnnbench.models]\n{name} = {module}:TwoHop\n")
    (root / f"{module}.py").write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('imported')\n"
                                       + NETS)


def test_plugin_code_is_imported_only_when_a_suite_names_it(tmp_path, monkeypatch):
    marker = tmp_path / "imported.txt"
    install_entry_point(tmp_path / "site", "BoomGNN", "boom_gnn_plugin", marker)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    zoo = csl_suite({"GCN": "CSL_graph_classification_GCN_CSL_100k"})
    load_suite(zoo)
    assert not marker.exists() and "boom_gnn_plugin" not in sys.modules
    for spelling in ("BoomGNN", "entrypoint:BoomGNN"):  # a bare name no zoo has, and the explicit form
        suite = load_suite(csl_suite({"Boom": {"model": spelling, "set": {"hidden_channels": H}}}))
        config = suite.run_config("CSL", "Boom", 1)
        assert config["model"] == spelling and config["variant"] == "plugin"
        assert marker.read_text() == "imported"
    assert resolve({"model": "BoomGNN"}).load().__module__ == "boom_gnn_plugin"
    # importing gnnbench (registry, keys, plugins, the suite) imports no plugin and not PyTorch Geometric
    code = ("import sys, gnnbench, gnnbench.models.registry, gnnbench.models.plugins, gnnbench.suite; "
            "print(sorted(m for m in sys.modules if m.startswith(('torch_geometric', 'boom_gnn'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(tmp_path / "site")})
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------------------------------------- PyG models


def pyg_config(name: str) -> dict:
    return {"model": f"{PYG}.{name}", "hidden_channels": H, "num_layers": 2, **(PNA_ARGS if name == "PNA" else {})}


@pytest.mark.parametrize("task", ["node_classification", "graph_classification"])
@pytest.mark.parametrize("name", ["GCN", "GIN", "GAT", "GraphSAGE", "PNA", "EdgeCNN"])
def test_pyg_models_build_with_their_constructor_arguments_only(name, task, monkeypatch):
    import torch_geometric.nn.models as pyg

    from gnnbench.data.batching import model_dtypes
    from gnnbench.data.store import GraphStore

    meta = meta_for(task)  # categorical node (vocabulary 5) and edge (vocabulary 4) features
    columns = labelled(random_graphs(6, seed=2), task)
    store = model_dtypes(GraphStore.from_columns(columns))
    batch = one_batch(columns)
    assert batch.edge_index.dtype == torch.int64  # what PyG's layers index with
    config = pyg_config(name)
    torch.manual_seed(0)
    model = build_model(config, ModelData(meta, store=store))
    # an independent count: PyG's own module with the arguments gnnbench injects (in_channels = the embedding
    # width; edge_dim for the layers that read edge features; PNA's deg), plus the embeddings and the head
    edges = name in ("GAT", "PNA")  # supports_edge_attr: the edge features are embedded into edge_dim = H
    extra = {"edge_dim": H} if edges else {}
    if name == "PNA":
        extra["deg"] = in_degree_histogram(store)
    reference = getattr(pyg, name)(in_channels=H, hidden_channels=H, num_layers=2, **extra,
                                   **(PNA_ARGS if name == "PNA" else {}))
    expected = count_parameters(reference) + 5 * H + (4 * H if edges else 0) + mlp_readout_params(H, meta.num_outputs)
    assert count_parameters(model) == num_parameters(config, meta) == expected
    # the module is called with the batch's tensors by name, never through GraphBatch.to_pyg()
    monkeypatch.setattr(GraphBatch, "to_pyg", lambda self: pytest.fail("to_pyg on the hot path"))
    model.eval()
    out = model(batch)
    rows = batch.num_nodes if task == "node_classification" else batch.num_graphs
    assert out.shape == (rows, meta.num_outputs)
    reference.load_state_dict(model.architecture.module.state_dict())
    reference.eval()
    h = model.node_encoder(batch.x, None)
    e = model.edge_encoder(batch.edge_attr, batch.num_edges) if edges else None
    with torch.no_grad():
        alone = reference(h, batch.edge_index, edge_attr=e, batch=batch.batch)
        assert torch.allclose(model.encode(batch).nodes, alone, atol=1e-6)


def test_pna_degree_histogram_is_that_of_the_training_graphs():
    from gnnbench.data.batching import model_dtypes
    from gnnbench.data.store import GraphStore

    columns = labelled(random_graphs(5, seed=4), "graph_classification")
    store = model_dtypes(GraphStore.from_columns(columns))
    train = torch.tensor([0, 3])
    in_degree = []  # by hand, graph by graph (a test, not a hot path)
    for g in train.tolist():
        dst = columns.dst[columns.edge_ptr[g]:columns.edge_ptr[g + 1]]
        in_degree += np.bincount(dst, minlength=columns.num_nodes[g]).tolist()
    assert in_degree_histogram(store, train).tolist() == np.bincount(in_degree).tolist()
    model = build_model(pyg_config("PNA"), ModelData(meta_for("graph_classification"), store=store,
                                                     train_graphs=train))
    scaler = model.architecture.module.convs[0].aggr_module  # DegreeScalerAggregation keeps the average degree
    log_mean = float(np.log(np.asarray(in_degree) + 1).mean())
    assert float(scaler.avg_deg_log) == pytest.approx(log_mean, rel=1e-6)


def test_a_continuous_dataset_reaches_a_backbone_raw_unless_in_channels_is_set():
    meta = continuous_meta(width=3)
    config = {"model": f"{PYG}.GCN", "hidden_channels": H, "num_layers": 2}
    raw = build_model(config, meta)
    assert raw.architecture.module.convs[0].lin.in_channels == 3 and count_parameters(raw.node_encoder) == 0
    projected = build_model({**config, "in_channels": 6}, meta)
    assert projected.architecture.module.convs[0].lin.in_channels == 6
    assert count_parameters(projected.node_encoder) == 3 * 6 + 6


def test_lazy_layers_are_resolved_by_the_dry_forward_and_counted(nets):
    meta = continuous_meta(width=3, outputs=4)
    config = {"model": f"{nets}/nets.py:Lazy", "hidden_channels": H}
    model = build_model(config, meta)
    assert not any(isinstance(p, torch.nn.parameter.UninitializedParameter) for p in model.parameters())
    expected = (3 * H + H) + mlp_readout_params(H, 4)
    assert count_parameters(model) == num_parameters(config, meta) == expected


def test_a_module_of_torch_is_a_full_model_by_its_signature_and_its_output_is_checked():
    spec_config = {"model": "torch.nn:Identity"}  # forward(input): one argument, the batch
    assert resolve(spec_config).kind == "full"
    with pytest.raises(ConfigError, match=r"^model: Identity.forward returned shape GraphBatch on a stand-in batch "
                                          r"of 2 graphs, 7 nodes, 14 edges; graph_classification on dataset "
                                          r"test-continuous needs \(2, 4\)"):
        build_model(spec_config, continuous_meta(width=3, outputs=4))


def test_a_full_model_plugin_is_built_with_injected_arguments(nets):
    spec = f"{nets}/nets.py:MeanPool"
    meta = continuous_meta(width=3, outputs=4)
    model = build_model({"model": spec, "hidden": 5}, meta)
    assert isinstance(model, FullModel) and model.own_readout and model.aux_loss == 0.0
    assert (model.module.lin.in_features, model.module.lin.out_features, model.module.out.out_features) == (3, 5, 4)
    assert num_parameters({"model": spec, "hidden": 5}, meta) == (3 * 5 + 5) + (5 * 4 + 4)
    columns = labelled(random_graphs(5, seed=3), "graph_classification", 4)
    columns.node["x"] = np.random.default_rng(0).normal(size=(int(columns.num_nodes.sum()), 3)).astype(np.float32)
    batch = one_batch(columns)
    assert torch.equal(model(batch), model.module(batch))
    regression = build_model({"model": spec}, continuous_meta("graph_regression", outputs=1))
    assert regression(batch).shape == (batch.num_graphs,)  # (B, 1) squeezed for the one regression target


# ------------------------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("entry", "message"), [
    ({"model": "not_a_package_xyz.nets:MyGNN"},
     "cannot import module 'not_a_package_xyz.nets' (no module named 'not_a_package_xyz'); install the package"),
    ({"model": "missing_file.py:MyGNN"}, "missing_file.py does not exist (a relative path is read from the suite "
                                         "file's folder"),
    ({"model": "{nets}/fails_on_import.py:MyGNN"},
     "importing {nets}/fails_on_import.py failed: ModuleNotFoundError: No module named 'not_a_module_of_anyone_xyz'"),
    ({"model": "{nets}/broken.py:Missing"}, "has no class 'Missing'; it defines Crashes, Flat, NodeOnly, NodeScores, "
                                            "Pooled, Raises, Strict, WrongForward: name one of them after the colon"),
    ({"model": "{nets}/broken.py:NotAModule"}, "is a class, not a torch.nn.Module subclass"),
    ({"model": "{nets}/broken.py:make_model"}, "is a function, not a torch.nn.Module subclass"),
    ({"model": "{nets}/broken.py:WrongForward"}, "forward(x, adj) fits neither kind of model"),
    ({"model": "{nets}/broken.py:Flat", "set": {"in_channels": 4}},
     "Flat.forward returned shape (7,) on a stand-in batch of 7 nodes, a 1-D tensor: keep the feature dimension"),
    ({"model": "{nets}/broken.py:Pooled", "set": {"in_channels": 4}},
     "Pooled.forward returned shape (2, 4) on a stand-in batch of 7 nodes, not one row per node"),
    ({"model": "{nets}/broken.py:NodeScores"}, "NodeScores.forward returned shape (7, 10) on a stand-in batch of 2 "
                                               "graphs, 7 nodes, 14 edges; graph_classification on dataset CSL "
                                               "needs (2, 10)"),
    ({"model": "{nets}/broken.py:NodeOnly", "set": {"in_channels": 4}},
     "cannot do graph_classification (dataset CSL): its class attribute tasks lists node_classification"),
    ({"model": "{nets}/broken.py:Raises", "set": {"hidden_channels": 3}},
     "Raises(hidden_channels=3, in_channels=3) failed for dataset CSL: ValueError: hidden_channels must be even"),
    ({"model": "{nets}/broken.py:Strict", "set": {"in_channels": 4}},
     "Strict(in_channels, hidden_channels) needs hidden_channels; set it"),
    ({"model": "{nets}/broken.py:Strict"}, "dataset CSL has categorical node features, which gnnbench encodes into "
                                           "in_channels features"),
    ({"model": "{nets}/broken.py:Crashes", "set": {"in_channels": 4}},
     "Crashes.forward failed on a stand-in batch of dataset CSL's feature sizes: RuntimeError: mat1 and mat2"),
    ({"model": f"{PYG}.GCN", "set": {"hidden_channels": 4, "num_layers": 2, "readout": "median"}},
     "benchmarks.CSL.models.X.readout: unknown readout 'median'; choose one of sum, mean, max"),
])
def test_a_model_that_cannot_run_is_refused_in_one_line_before_any_job(nets, entry, message):
    entry = {k: v.format(nets=nets) if isinstance(v, str) else v for k, v in entry.items()}
    message = message.format(nets=nets)
    with pytest.raises(ConfigError) as err:
        load_suite(csl_suite({"X": entry}))
    text = str(err.value)
    assert message in text and "\n" not in text, text
    key = "readout" if "readout" in message else "in_channels" if "encodes into" in message else "model"
    assert text.startswith(f"benchmarks.CSL.models.X.{key}: "), text


def test_an_unknown_key_names_the_key_and_lists_the_constructors_arguments(nets):
    with pytest.raises(ConfigError) as err:
        load_suite(csl_suite({"X": {"model": f"{nets}/broken.py:Strict", "set": {"hiden_channels": 4}}}))
    assert str(err.value) == (
        "benchmarks.CSL.models.X.hiden_channels: unknown config key 'hiden_channels' (did you mean hidden_channels, "
        f"in_channels?); model {nets}/broken.py:Strict takes the arguments of Strict(in_channels, hidden_channels), "
        "gnnbench's keys in_channels, edge_dim, readout, edge_feat, pos_enc, pos_enc_dim and the protocol's training "
        "keys; fix the key")
    # a constructor with **kwargs (PyG's) takes any key; the model refuses what it cannot use when built
    with pytest.raises(ConfigError, match="failed for dataset CSL: TypeError: MessagePassing.__init__.. got an "
                                          "unexpected keyword argument 'hiden_channels'; fix the model's arguments"):
        load_suite(csl_suite({"X": {"model": f"{PYG}.GCN",
                                    "set": {"hidden_channels": 4, "num_layers": 2, "hiden_channels": 4}}}))


# ------------------------------------------------------------------------------------------------- budgets


def test_a_budget_fits_the_width_argument_of_any_model():
    meta = describe_dataset("ZINC")
    config = run_config(None, {"model": f"{PYG}.GIN", "num_layers": 4})
    fit = fit_width(config, meta, 100_000)
    assert fit.config["hidden_channels"] == fit.hidden_dim
    assert fit.total_params == num_parameters(fit.config, meta) <= 100_000
    assert num_parameters({**fit.config, "hidden_channels": fit.hidden_dim + 1}, meta) > 100_000
    assert fit.total_params > 0.95 * 100_000


def test_a_suite_budget_sizes_a_plugin_and_refuses_what_cannot_be_sized(nets):
    spec = f"{nets}/nets.py:TwoHop"
    suite = load_suite(csl_suite({"Mine": {"model": spec, "budget": 20_000, "set": {"num_layers": 3}},
                                  "GIN": {"model": f"{PYG}.GIN", "budget": 20_000, "width": "hidden_channels",
                                          "set": {"num_layers": 2}}}))
    meta = suite.datasets["CSL"].meta
    for label in ("Mine", "GIN"):
        config = suite.run_config("CSL", label, 1)
        width = config["hidden_channels"]
        assert num_parameters(config, meta) <= 20_000 < num_parameters({**config, "hidden_channels": width + 1}, meta)
    for entry, message in [
        ({"model": spec, "budget": 20_000, "width": "residual", "set": {"hidden_channels": H}},
         "benchmarks.CSL.models.X.width: residual does not change the parameter count of"),
        ({"model": spec, "budget": 20_000, "width": "depth", "set": {"hidden_channels": H}},
         "benchmarks.CSL.models.X.width: 'depth' is not an argument of TwoHop(in_channels, hidden_channels"),
        ({"model": spec, "budget": 10}, "benchmarks.CSL.models.X.budget: " + spec + " has"),
        ({"model": spec, "budget": 20_000, "layers": 3}, "benchmarks.CSL.models.X.layers: layers sets L of the "
                                                        "benchmark's models"),
        ({"model": spec, "width": "hidden_channels"}, "benchmarks.CSL.models.X.width: width names the constructor "
                                                      "argument a budget fits; add budget"),
        ({"model": "GCN", "budget": 20_000, "width": "hidden_dim"}, "benchmarks.CSL.models.X.width: width names the "
                                                                    "constructor argument a budget fits for a model "
                                                                    "of your own"),
    ]:
        with pytest.raises(ConfigError) as err:
            load_suite(csl_suite({"X": entry}))
        assert message in str(err.value) and "\n" not in str(err.value), str(err.value)


# ------------------------------------------------------------------------------------------------- protocols


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """Tiny generated datasets: CSL (categorical node features), a one-graph CSBM, graph families (degree)."""
    root = tmp_path_factory.mktemp("plugin-data")
    generate_dataset("csl", "CSL", {"copies_per_class": 5}, 1, root / "CSL")
    make_split_file(root / "CSL", "stratified_kfold", {"folds": 5, "val_fraction": 0.25, "seed": 0}, root / "csl.json")
    generate_dataset("csbm", "CSBM", {"num_nodes": 90, "num_classes": 3, "num_features": 6}, 1, root / "CSBM")
    make_split_file(root / "CSBM", "random_per_class", {"splits": 1, "train_per_class": 5, "val_per_class": 5,
                                                         "seed": 0}, root / "csbm.json")
    generate_dataset("graph_families", "GF", {"num_graphs": 30, "features": "degree"}, 1, root / "GF")
    make_split_file(root / "GF", "stratified_kfold", {"folds": 3, "val_fraction": 0.2, "seed": 0}, root / "gf.json")
    return root


def test_a_file_plugin_trains_under_benchmarking_gnns_and_its_run_record_says_plugin(nets, data, tmp_path):
    from gnnbench.protocols.benchmarking_gnns.train import train

    spec = f"{nets}/nets.py:TwoHop"
    config = run_config(None, {"model": spec, "hidden_channels": H, "epochs": 2, "batch_size": 16, "seed": 3})
    runs = [train(dataset_dir=data / "CSL", splits_path=data / "csl.json", fold=0, config=config,
                  out_dir=tmp_path / f"run{i}", threads=1, records_out=tmp_path / f"run{i}.parquet")
            for i in (0, 1)]
    meta = read_meta(data / "CSL")
    # CSL's one categorical feature is embedded into hidden_channels: Embedding(vocabulary, H), two layers of
    # Linear(2H, H), the benchmark's head
    vocabulary = meta.node_features.size
    expected = vocabulary * H + 2 * (2 * H * H + H) + mlp_readout_params(H, meta.num_outputs)
    assert runs[0]["num_params"] == num_parameters(config, meta) == expected
    assert runs[0]["epochs"] == 2 and np.isfinite(runs[0]["test"]["loss"])
    assert runs[0]["test"] == runs[1]["test"]  # seeded: the same run twice gives the same scores
    record = pd.read_parquet(tmp_path / "run0.parquet").iloc[0]
    assert (record["variant"], record["architecture"], record["num_params"]) == ("plugin", spec, expected)


def test_a_module_plugin_trains_under_pitfalls_one_initialisation_as_in_the_stack(on_path, data, tmp_path):
    from gnnbench.protocols.pitfalls.train import run_chunk

    config = run_config(None, {"model": "userzoo.layers:TwoHop", "hidden_channels": H, "num_epochs": 6},
                        protocol="pitfalls")
    common = {"dataset_dir": data / "CSBM", "splits_path": data / "csbm.json", "splits": [0], "config": config,
              "seed": 4, "threads": 1}
    both = run_chunk(**common, inits=2, out_dir=tmp_path / "both")
    run_chunk(**common, inits=2, init_ids=[1], out_dir=tmp_path / "one")
    meta = read_meta(data / "CSBM")
    assert both["runs"] == 2 and both["num_params"] == num_parameters(config, meta, default_variant="shchur2018")
    stacked = pq.read_table(tmp_path / "both" / "runs.parquet").to_pandas().set_index("init")
    alone = pq.read_table(tmp_path / "one" / "runs.parquet").to_pandas().set_index("init")
    for column in ("test_accuracy", "val_loss", "epochs", "best_epoch"):
        assert alone.loc[1, column] == pytest.approx(stacked.loc[1, column], rel=1e-5), column


def test_a_pyg_model_runs_fair_comparisons_grid_over_its_constructor_arguments(data, tmp_path):
    from gnnbench.protocols.fair_comparison import grid as fc_grid
    from gnnbench.protocols.fair_comparison import train as fc_train

    block = {"protocol": "fair-comparison", "folds": [0], "set": {"epochs": 2, "batch_size": 8, "num_layers": 2},
             "models": {"GIN": {"model": f"{PYG}.GIN", "grid": {"hidden_channels": [4, 8], "jk": ["cat", "last"]}}}}
    suite = load_suite({"datasets": {"GF": {"generator": "graph_families", "seed": 1,
                                            "params": {"num_graphs": 30, "features": "degree"}}},
                        "benchmarks": {"GF": block}})
    configs = suite.benchmarks["GF"].grids["GIN"]
    assert [(c["hidden_channels"], c["jk"]) for c in configs] == [(4, "cat"), (4, "last"), (8, "cat"), (8, "last")]
    assert all(c["variant"] == "plugin" and c["learning_rate"] == 0.001 for c in configs)
    out = tmp_path / "inner" / "part0.parquet"
    fc_train.run_inner(dataset_dir=data / "GF", splits_path=data / "gf.json", fold=0, configs=configs[:2],
                 positions=[0, 1], seed=1, out=out, device="cpu", threads=1)
    rows = pq.read_table(out).to_pylist()
    assert [json.loads(r["config"])["jk"] for r in rows] == ["cat", "last"]
    assert all(r["epochs"] == 2 and 0 <= r["val_accuracy"] <= 100 for r in rows)
    assert fc_grid.num_layers(configs[0]) == 2


def test_pitfalls_settings_take_any_constructor_argument(nets):
    block = {"protocol": "pitfalls", "inits": 2, "set": {"num_epochs": 3},
             "models": {"Mine": {"model": f"{nets}/nets.py:TwoHop", "set": {"hidden_channels": 4, "residual": True,
                                                                            "learning_rate": 0.05}}}}
    suite = load_suite({"datasets": {"CSBM": {"generator": "csbm", "seed": 1, "params": {"num_nodes": 150,
                                                                                           "num_classes": 3}}},
                        "benchmarks": {"CSBM": block}})
    config = suite.benchmarks["CSBM"].models["Mine"].config
    assert (config["residual"], config["learning_rate"], config["num_epochs"], config["weight_decay"]) == (
        True, 0.05, 3, 0.001)


def test_gnnbench_train_takes_a_plugin_from_set(data, tmp_path, capsys):
    from gnnbench.cli import main

    args = ["train", "benchmarking-gnns", "--dataset", str(data / "CSL"), "--splits", str(data / "csl.json"),
            "--set", f"model={PYG}.GraphSAGE", "--set", f"hidden_channels={H}", "--set", "num_layers=2",
            "--set", "epochs=1", "--set", "batch_size=16", "--seed", "2", "--threads", "1"]
    assert main([*args, "--out", str(tmp_path / "run")]) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["config"]["variant"] == "plugin" and metrics["config"]["model"] == f"{PYG}.GraphSAGE"
    assert metrics["num_params"] == num_parameters(metrics["config"], read_meta(data / "CSL"))
    capsys.readouterr()
    assert main([*args[:-4], "--set", "model=not_a_package_xyz:Net", "--out", str(tmp_path / "bad")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("gnnbench: error: --set model: cannot import module 'not_a_package_xyz'") and "\n" not in err


def test_gnnbench_train_of_pitfalls_and_fair_comparison_takes_a_plugin_from_set(data, tmp_path):
    from gnnbench.cli import main

    model = ["--set", f"model={PYG}.GCN", "--set", f"hidden_channels={H}", "--set", "num_layers=2"]
    assert main(["train", "pitfalls", "--dataset", str(data / "CSBM"), "--splits", str(data / "csbm.json"), *model,
                 "--set", "num_epochs=3", "--inits", "2", "--threads", "1", "--out", str(tmp_path / "p2")]) == 0
    runs = pq.read_table(tmp_path / "p2" / "runs.parquet").to_pandas()
    assert sorted(runs["init"]) == [0, 1] and (runs["architecture"] == f"{PYG}.GCN").all()
    assert (runs["epochs"] <= 3).all()
    # fair-comparison without a preset: the one configuration --set gives, selected and trained again
    assert main(["train", "fair-comparison", "--dataset", str(data / "GF"), "--splits", str(data / "gf.json"), *model,
                 "--set", "epochs=2", "--set", "batch_size=8", "--final-runs", "1", "--final-holdout", "selection",
                 "--threads", "1", "--out", str(tmp_path / "p3")]) == 0
    chosen = json.loads((tmp_path / "p3" / "selection.json").read_text())["chosen"]["config"]
    assert (chosen["model"], chosen["variant"], chosen["hidden_channels"]) == (f"{PYG}.GCN", "plugin", H)
    assert len(pq.read_table(tmp_path / "p3" / "final.parquet")) == 1
