"""Inputs that used to give a silent wrong result are refused in one line: a JSON key given twice (the last list
kept, a part's indices dropped), layer and thread counts below 1, budgets outside what the width range can reach,
a width argument that is not an argument's name, plugin sizes of 0, and models without trainable parameters. Also
how few models a budget fit builds (a plugin's constructor may be slow) and that the fit stays exact."""

from __future__ import annotations

import json
import logging
import subprocess

import pytest
import torch
from conftest import snakemake

from gnnbench.config import budget
from gnnbench.config.budget import MAX_WIDTH, base_preset, fit_budget
from gnnbench.config.presets import run_config
from gnnbench.data.catalog import describe_dataset
from gnnbench.errors import ConfigError, DataError
from gnnbench.io import DuplicateKey, parse_json, read_json
from gnnbench.models.build import build_model, count_parameters, num_parameters
from gnnbench.splits import read_fair_comparison_folds
from gnnbench.suite import load_suite
from gnnbench.training.engine import make_optimizer

MLP = "CSL_graph_classification_MLP_CSL_100k"

PLUGINS = '''
import torch
from torch import nn


class Counted(nn.Module):
    """A backbone that records the width of every construction."""

    built = []

    def __init__(self, in_channels: int, hidden_channels: int = 8, num_layers: int = 2):
        super().__init__()
        Counted.built.append(hidden_channels)
        widths = [in_channels] + [hidden_channels] * num_layers
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))

    def forward(self, x, edge_index):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


class Classifier(nn.Module):
    """A full model of categorical node inputs whose count is known: in_channels * h + h * C + C."""

    tasks = ("graph_classification",)

    def __init__(self, in_channels: int, num_classes: int, hidden_channels: int = 8):
        super().__init__()
        self.embed = nn.Embedding(in_channels, hidden_channels)
        self.out = nn.Linear(hidden_channels, num_classes)

    def forward(self, batch):
        h = self.embed(batch.x)
        pooled = h.new_zeros(batch.num_graphs, h.shape[1]).index_add_(0, batch.batch, h)
        return self.out(pooled)


class Weightless(nn.Module):
    """A full model without parameters: every layer is parameter-free."""

    tasks = ("graph_classification",)

    def __init__(self, num_classes: int):
        super().__init__()
        self.num_classes = num_classes

    def forward(self, batch):
        return torch.zeros(batch.num_graphs, self.num_classes) + batch.x.float().sum() * 0


class Empty(nn.Module):
    """A backbone that returns node representations without features."""

    def __init__(self, in_channels: int, hidden_channels: int = 8):
        super().__init__()
        self.lin = nn.Linear(in_channels, hidden_channels)

    def forward(self, x, edge_index):
        return self.lin(x)[:, :0]
'''


@pytest.fixture(scope="module")
def plugins(tmp_path_factory):
    root = tmp_path_factory.mktemp("silent")
    (root / "plugins.py").write_text(PLUGINS)
    return root / "plugins.py"


def run_here(capsys, *args) -> subprocess.CompletedProcess:
    """``gnnbench.cli.main`` in this process: exit status, stdout and stderr."""
    from gnnbench.cli import main

    capsys.readouterr()
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, status, out, err)


def assert_one_line(result: subprocess.CompletedProcess, message: str) -> None:
    assert result.returncode == 1, result.stderr[-3000:]
    assert result.stderr.splitlines() == [f"gnnbench: error: {message}"], result.stderr[-3000:]
    assert result.stdout == ""


def csl_suite(models: dict, split: dict | None = None) -> dict:
    split = split or {"scheme": "stratified_kfold", "folds": 5, "val_fraction": 0.25, "seed": 1}
    return {"datasets": {"CSL": {"generator": "csl", "seed": 1, "split": split}},
            "benchmarks": {"CSL": {"seeds": [1], "models": models}}}


def refusal(config: dict, **kwargs) -> str:
    with pytest.raises((ConfigError, DataError)) as err:
        load_suite(config, **kwargs)
    assert "\n" not in str(err.value)
    return str(err.value)


# ------------------------------------------------------------------------------------ a JSON key given twice


def test_parse_json_refuses_a_key_twice_in_one_object_with_its_position():
    document = ('[{"train": [0, 1], "val": [2],\n  "test": [3], "train": [4]},\n'
                ' {"train": [5], "val": [6], "test": [7]}]')
    with pytest.raises(DuplicateKey) as err:
        parse_json(document)
    assert (err.value.key, err.value.line, err.value.column) == ("train", 2, 16)
    assert str(err.value) == 'the key "train" twice in one object (line 2, column 16)'
    # nested objects are checked; the first repeat in the text is named; an escaped spelling is the same key
    for text, key, line, column in [('{"a": {"x": 1, "x": 2}, "a": 3}', "x", 1, 16),
                                    ('{"b": [{"d": 1}, {"d": 1, "d" : 2}]}', "d", 1, 27),
                                    ('{"\\u0061": 1,\n"a": 2}', "a", 2, 1)]:
        with pytest.raises(DuplicateKey) as err:
            parse_json(text)
        assert (err.value.key, err.value.line, err.value.column) == (key, line, column), text
    # the same key in different objects is no repeat: the value is json.loads'
    valid = '[{"train": [0], "val": [1], "test": [2]}, {"train": [3], "val": [4], "test": [5], "x": {"train": 1}}]'
    assert parse_json(valid) == json.loads(valid)


def test_a_split_file_with_a_part_twice_is_refused_at_suite_load(tmp_path):
    (tmp_path / "folds.json").write_text('[{"train": [0, 1, 2, 3], "val": [4, 5],\n'
                                         '  "test": [6, 7], "train": [8, 9]}]\n')
    message = refusal(csl_suite({"MLP": MLP}, {"scheme": "file", "path": "folds.json"}), base_dir=tmp_path)
    assert message == (f'split file {tmp_path / "folds.json"}: has the key "train" twice in one object (line 2, '
                       'column 19); give each part once (merge the two lists)')
    assert not (tmp_path / "results").exists()


def test_gnnbench_splits_refuses_a_split_file_with_a_key_twice(capsys, datasets, tmp_path):
    (tmp_path / "folds.json").write_text('[{"train": [0, 1], "val": [2], "test": [3], "val": [4]}]')
    out = tmp_path / "splits.json"
    result = run_here(capsys, "splits", datasets["CSL"], "--scheme", "file", "--path", tmp_path / "folds.json",
                      "--out", out)
    assert_one_line(result, f'split file {tmp_path / "folds.json"}: has the key "val" twice in one object (line 1, '
                            'column 45); give each part once (merge the two lists)')
    assert not out.exists()


def test_a_published_split_file_with_a_key_twice_is_refused(tmp_path):
    path = tmp_path / "ENZYMES_splits.json"
    path.write_text('[{"test": [0, 1],\n  "model_selection": [{"train": [2, 3], "validation": [4], "train": [5]}]}]')
    with pytest.raises(DataError) as err:
        read_fair_comparison_folds(path, 6)
    assert str(err.value) == (f'published split file {path} has the key "train" twice in one object (line 2, column '
                              '60): JSON would keep only the last value; remove or merge the other')
    with pytest.raises(DataError, match='has the key "x" twice'):
        read_json(_write(tmp_path / "meta.json", '{"x": 1, "x": 2}'), "dataset metadata")


def _write(path, text: str):
    path.write_text(text)
    return path


# ------------------------------------------------------------------------------------ budgets out of reach


def test_a_budget_below_the_smallest_zoo_model_is_refused(capsys):
    result = run_here(capsys, "fit-budget", "--dataset", "ZINC", "--model", "GCN", "--budget", 10)
    assert_one_line(result, "fit-budget: GCN has 239 parameters already at hidden_dim=4, out_dim=4 (its smallest "
                            "widths), more than the budget of 10; raise the budget (or lower L)")
    config = run_config(base_preset("ZINC", "GCN"))
    assert count_parameters(build_model({**config, "hidden_dim": 4, "out_dim": 4}, describe_dataset("ZINC"))) == 239
    # the same function sizes a suite's budget, when the suite is loaded
    assert refusal(csl_suite({"X": {"model": "GCN", "budget": 10}})) == (
        "benchmarks.CSL.models.X: fit-budget: GCN has 149 parameters already at hidden_dim=4, out_dim=4 (its smallest "
        "widths), more than the budget of 10; raise the budget (or lower L)")


def test_a_budget_reached_only_by_a_narrower_out_dim_is_still_fitted():
    """GAT (8 heads) on ZINC has 20,513 parameters at width 4 with out_dim = 32, fewer with a narrower out_dim: a
    budget of 20,000 is not below the smallest model the fit can give, so it is fitted (out_dim tuned)."""
    config, meta = run_config("molecules_graph_regression_GAT_ZINC_500k"), describe_dataset("ZINC")
    assert count_parameters(build_model({**config, "hidden_dim": 4, "out_dim": 32}, meta)) == 20_513
    fit = fit_budget(config, meta, 20_000)
    assert (fit.hidden_dim, fit.out_dim, fit.total_params) == (4, 25, 19_978)


def test_a_budget_beyond_the_widest_model_is_refused_without_building_it(capsys, monkeypatch):
    import gnnbench.config.budget as budget

    widths = []
    build = budget.build_model

    def recording(config, *args, **kwargs):
        widths.append(config.get("hidden_dim"))
        return build(config, *args, **kwargs)

    monkeypatch.setattr(budget, "build_model", recording)  # the name the fit calls
    result = run_here(capsys, "fit-budget", "--dataset", "ZINC", "--model", "GCN", "--budget", 10**11)
    config = run_config(base_preset("ZINC", "GCN"))
    with torch.device("meta"):  # the true count at the cap, without allocating the weights
        top = count_parameters(build({**config, "hidden_dim": MAX_WIDTH, "out_dim": MAX_WIDTH},
                                     describe_dataset("ZINC")))
    assert_one_line(result, f"fit-budget: GCN has {top} parameters at hidden_dim=16384 (the largest width fitted), "
                            "less than the budget of 100000000000; lower the budget (or raise L)")
    assert max(widths) <= 64 < MAX_WIDTH  # the widest model was not built (it takes gigabytes and minutes)


def test_a_plugin_budget_beyond_the_widest_model_is_refused_without_building_it(plugins):
    spec = f"{plugins}:Classifier"
    meta = describe_dataset("CSL")
    inputs, classes = meta.node_features.size, meta.num_outputs
    top = inputs * MAX_WIDTH + MAX_WIDTH * classes + classes  # the class's count at the cap
    message = refusal(csl_suite({"X": {"model": spec, "budget": 10**11}}))
    assert message == (f"benchmarks.CSL.models.X.budget: {spec} has {top} parameters at hidden_channels=16384 (the "
                       "largest width fitted), within the budget of 100000000000; lower the budget or grow the "
                       "model's other arguments")


@pytest.mark.parametrize("value", ["0", "true", "''"])
def test_fit_budget_refuses_a_width_that_is_not_an_argument_name(capsys, plugins, value):
    result = run_here(capsys, "fit-budget", "--dataset", "ZINC", "--model", f"{plugins}:Counted", "--set",
                      f"width={value}", "--budget", 10000)
    shown = {"0": "0", "true": "True", "''": "''"}[value]
    assert_one_line(result, f"width: got {shown}, but width names the constructor argument to fit (default "
                            "hidden_channels); give one of the arguments of Counted(in_channels, hidden_channels=8, "
                            "num_layers=2)")


# ------------------------------------------------------------------------------------ how a fit searches


def test_a_plugin_budget_builds_few_models_and_says_what_it_fits(plugins, caplog):
    spec = f"{plugins}:Counted"
    from gnnbench.models.plugins import load_class

    built = load_class(spec).built
    built.clear()
    with caplog.at_level(logging.INFO, logger="gnnbench.config.budget"):
        suite = load_suite(csl_suite({"X": {"model": spec, "budget": 20_000, "set": {"num_layers": 3}}}))
    constructed = list(built)
    config = suite.run_config("CSL", "X", 1)
    width, meta = config["hidden_channels"], suite.datasets["CSL"].meta
    assert num_parameters(config, meta) <= 20_000 < num_parameters({**config, "hidden_channels": width + 1}, meta)
    # widths 4, 8, 16 (the quadratic), the predicted width and its neighbour; then the check of the fitted model
    assert constructed == [4, 8, 16, width + 1, width, width]
    assert [r.getMessage() for r in caplog.records] == [  # one line, after the fit: a refusal stays one line
        f"fitted hidden_channels of {spec} to a budget of 20000 parameters: {width} "
        f"({num_parameters(config, meta)} parameters; 5 models built)"]


@pytest.mark.slow
def test_a_dry_run_shows_the_line_of_each_budget_fit(plugins, tmp_path):
    """Snakemake shows no INFO: the workflow shows the fit's line itself, so that a slow constructor built while the
    suite loads is not silent."""
    spec = f"{plugins}:Counted"
    config = csl_suite({"X": {"model": spec, "budget": 20_000, "set": {"num_layers": 3}}})
    fitted = load_suite(config).run_config("CSL", "X", 1)
    width, count = fitted["hidden_channels"], num_parameters(fitted, describe_dataset("CSL"))
    result = snakemake(tmp_path, "-n", config=config)
    assert result.returncode == 0, result.stderr[-3000:]
    assert [line for line in result.stderr.splitlines() if "fitted" in line] == [
        f"gnnbench: fitted hidden_channels of {spec} to a budget of 20000 parameters: {width} ({count} parameters; "
        "5 models built)"]


def test_a_zoo_fit_is_the_closest_width_of_a_plain_search():
    config, meta = run_config(base_preset("ZINC", "GCN")), describe_dataset("ZINC")
    fit = fit_budget(config, meta, 100_000)
    counts = {w: count_parameters(build_model({**config, "hidden_dim": w, "out_dim": w}, meta)) for w in range(4, 200)}
    assert fit.hidden_dim == min(counts, key=lambda w: (abs(counts[w] - 100_000), w)) == 143
    assert fit.total_params == counts[143]


COUNTS = {  # counts that grow with the width: quadratic, with floors, cubic, with jumps, linear, in plateaus
    "quadratic": lambda w: 3 * w * w + 5 * w + 7,
    "floors": lambda w: w * (w // 2) + (w // 2) * (w // 4) + 11 * w + 3,
    "cubic": lambda w: w ** 3 // 7 + w,
    "jumps": lambda w: w * w * (1 + w // 64),
    "linear": lambda w: 10 * w + 3,
    "plateaus": lambda w: (w // 10) * 100 + 1,
}


@pytest.mark.parametrize("name", list(COUNTS))
def test_the_search_finds_what_a_scan_of_every_width_finds(name):
    count = COUNTS[name]
    for target in (1, count(4), count(4) + 1, 1000, 54_321, 10**6, 3 * 10**7, count(MAX_WIDTH), count(MAX_WIDTH) + 1):
        for reaches in (lambda n, t=target: n >= t, lambda n, t=target: n > t):
            calls: list[int] = []

            def counted(width: int, calls=calls) -> int:
                calls.append(width)
                return count(width)

            scan = next((w for w in range(budget.MIN_WIDTH, MAX_WIDTH + 1) if reaches(count(w))), None)
            expected = (scan, None) if scan is not None else (None, count(MAX_WIDTH))
            assert budget._smallest_width(counted, reaches) == expected, (name, target)
            assert len(calls) == len(set(calls))  # no width counted twice
            if name == "quadratic":  # the prediction is exact: at most the three fit widths, the guess, its neighbour
                assert len(calls) <= 5, (target, calls)
                assert max(calls) <= max(scan or 0, 64) + 1  # the cap is never built


# ------------------------------------------------------------------------------------ counts below 1


@pytest.mark.parametrize("layers", [0, -2])
def test_fit_budget_refuses_fewer_than_one_layer(capsys, layers):
    result = run_here(capsys, "fit-budget", "--dataset", "ZINC", "--model", "GCN", "--layers", layers, "--budget",
                      100000)
    assert_one_line(result, f"--layers: the number of layers L must be at least 1, got {layers}; give 1 or more (or "
                            "leave --layers out: the base config's L)")
    with pytest.raises(ConfigError, match=f"fit-budget: layers .L. must be an integer of at least 1, got {layers}"):
        fit_budget(run_config(base_preset("ZINC", "GCN")), describe_dataset("ZINC"), 100000, layers)


@pytest.mark.parametrize("threads", [0, -2])
def test_train_refuses_fewer_than_one_thread(capsys, tmp_path, threads):
    out = tmp_path / "run"
    result = run_here(capsys, "train", "benchmarking-gnns", "--dataset", tmp_path / "CSL", "--splits",
                      tmp_path / "splits.json", "--preset", MLP, "--threads", threads, "--out", out)
    assert_one_line(result, f"--threads: the number of CPU threads must be at least 1, got {threads}; give 1 or more "
                            "(or leave --threads out: torch's default)")
    assert not out.exists()


@pytest.mark.parametrize(("extra", "message"), [
    ({"resources": {"train": {"cpus": 0}}}, "resources.train.cpus: 0 is less than the minimum of 1"),
    ({"resources": {"dataset": {"cpus": -2}}}, "resources.dataset.cpus: -2 is less than the minimum of 1"),
    ({"threads_per_run": 0}, "threads_per_run: 0 is less than the minimum of 1"),
])
def test_a_suite_refuses_fewer_than_one_cpu(extra, message):
    assert refusal({**csl_suite({"MLP": MLP}), **extra}).startswith(message)


# ------------------------------------------------------------------------------------ plugin sizes


@pytest.mark.parametrize(("key", "value"), [("hidden_channels", 0), ("num_layers", 0), ("num_layers", -1),
                                            ("in_channels", 0)])
def test_a_plugin_size_below_one_is_refused_like_the_zoos(plugins, key, value):
    spec = f"{plugins}:Counted"
    assert refusal(csl_suite({"X": {"model": spec, "set": {key: value}}})) == (
        f"benchmarks.CSL.models.X.{key}: {key} must be at least 1, got {value}; fix the value")
    # PyTorch Geometric's names too, where the constructor takes them through **kwargs
    gat = {"model": "torch_geometric.nn.models.GAT", "set": {"hidden_channels": 8, "num_layers": 2, "heads": 0}}
    assert refusal(csl_suite({"G": gat})) == ("benchmarks.CSL.models.G.heads: heads must be at least 1, got 0; fix "
                                              "the value")


def test_fit_budget_refuses_a_plugin_size_below_one(capsys, plugins):
    result = run_here(capsys, "fit-budget", "--dataset", "ZINC", "--model", f"{plugins}:Counted", "--set",
                      "num_layers=0", "--budget", 10000)
    assert_one_line(result, "--set.num_layers: num_layers must be at least 1, got 0; fix the value")


def test_a_backbone_without_output_features_is_refused(plugins):
    spec = f"{plugins}:Empty"
    assert refusal(csl_suite({"X": {"model": spec}})) == (
        "benchmarks.CSL.models.X.model: Empty.forward returned shape (7, 0) on a stand-in batch of 7 nodes: node "
        "representations without features; give the model a width of at least 1 (e.g. hidden_channels)")


# ------------------------------------------------------------------------------------ nothing to train


def test_a_model_without_trainable_parameters_is_refused_at_suite_load(plugins):
    spec = f"{plugins}:Weightless"
    assert refusal(csl_suite({"Free": {"model": spec}})) == (
        f"benchmarks.CSL.models.Free: model {spec} has no trainable parameters (none with requires_grad), so training "
        "would change nothing and report its initial scores; give it weights (e.g. an nn.Linear)")


@pytest.mark.parametrize("protocol", ["benchmarking-gnns", "pitfalls", "fair-comparison"])
def test_train_names_the_option_that_gave_a_model_without_trainable_parameters(capsys, datasets, plugins, tmp_path,
                                                                               protocol):
    spec = f"{plugins}:Weightless"
    out = tmp_path / "run"
    result = run_here(capsys, "train", protocol, "--dataset", datasets["CSL"], "--splits", datasets["CSL_splits"],
                      "--set", f"model={spec}", "--out", out)  # no --preset: the model came from --set
    assert_one_line(result, f"--set: model {spec} has no trainable parameters (none with requires_grad), so training "
                            "would change nothing and report its initial scores; give it weights (e.g. an nn.Linear)")
    assert not out.exists()


def test_the_optimiser_refuses_a_model_without_trainable_parameters():
    frozen = torch.nn.Linear(3, 2).requires_grad_(False)
    for model in (torch.nn.ReLU(), frozen):
        for name in ("Adam", "TF1Adam"):
            with pytest.raises(ConfigError) as err:
                make_optimizer(model, 0.01, name=name)
            assert str(err.value) == ("the model has no trainable parameters, so training would change nothing and "
                                      "report its initial scores; give it weights (e.g. an nn.Linear)")
