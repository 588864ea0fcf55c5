"""Inputs that used to give a silent wrong result are refused in one line: a JSON key given twice (the last list
kept, a part's indices dropped), layer and thread counts below 1, budgets outside what the width range can reach,
a width argument that is not an argument's name, plugin sizes of 0, and models without trainable parameters. Also
how few models a budget fit builds (a plugin's constructor may be slow) and that the fit stays exact."""

from __future__ import annotations

import json
import subprocess

import pytest

from gnnbench.config.suite import load_suite
from gnnbench.errors import ConfigError, DataError
from gnnbench.io import DuplicateKey, parse_json, read_json
from gnnbench.splits import read_fair_comparison_folds

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
