"""Scheduler resources from the suite config (`resources:`): defaults, the older train shorthands, GPU requests in
the form snakemake-executor-plugin-slurm turns into ``--gpus=[model:]N``, and one-line errors."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from gnnbench.errors import ConfigError
from gnnbench.suite import RESOURCE_DEFAULTS, load_suite

REPO_ROOT = Path(__file__).resolve().parents[1]

DEFAULT = yaml.safe_load((REPO_ROOT / "config" / "config.yaml").read_text())


def suite(**top):
    config = copy.deepcopy(DEFAULT)
    config.pop("resources", None)
    config.update(top)
    return load_suite(config)


def test_defaults_and_the_default_config():
    plain = suite()
    assert plain.resources == RESOURCE_DEFAULTS
    assert plain.rule_resources("train") == {"mem_mb": 2000, "runtime": 720}  # no gpu key: no --gpus at all
    assert plain.rule_resources("dataset") == {"mem_mb": 8000, "runtime": 240}
    shipped = load_suite(copy.deepcopy(DEFAULT))
    assert shipped.resources["train"] == {"cpus": 1, "mem_mb": 2000, "runtime": 720, "gpus": 0}


def test_stage_values_override_defaults_and_set_the_train_shorthands():
    s = suite(resources={"train": {"cpus": 4, "mem_mb": 16000, "runtime": 30, "gpus": 2, "gpu_model": "a100"},
                         "label_shard": {"cpus": 8}})
    assert s.rule_resources("train") == {"mem_mb": 16000, "runtime": 30, "gpu": 2, "gpu_model": "a100"}
    assert (s.threads_per_run, s.mem_mb_per_run, s.runtime_per_run) == (4, 16000, 30)
    assert s.resources["label_shard"] == {"cpus": 8, "mem_mb": 2000, "runtime": 240}
    old = suite(threads_per_run=3, mem_mb_per_run=500)
    assert old.resources["train"] == {"cpus": 3, "mem_mb": 500, "runtime": 720, "gpus": 0}


def test_cuda_device_asks_for_one_gpu_by_default():
    assert suite(device="cuda").rule_resources("train")["gpu"] == 1


@pytest.mark.parametrize("top, message", [
    ({"resources": {"train": {"gpu": 1}}},
     "resources.train: Additional properties are not allowed ('gpu' was unexpected)"),
    ({"resources": {"dataset": {"gpus": 1}}},
     "resources.dataset: Additional properties are not allowed ('gpus' was unexpected)"),
    ({"resources": {"training": {}}}, "resources: Additional properties are not allowed ('training' was unexpected)"),
    ({"resources": {"train": {"mem_mb": 10}}}, "resources.train.mem_mb: 10 is less than the minimum of 100"),
    ({"resources": {"train": {"cpus": 2}}, "threads_per_run": 1},
     "resources.train.cpus (2) and threads_per_run (1) disagree; drop threads_per_run"),
    ({"resources": {"train": {"gpus": 0}}, "device": "cuda"},
     "resources.train.gpus: device is cuda but no GPU is requested; set gpus to 1 or more"),
])
def test_bad_resources_give_one_line_errors(top, message):
    with pytest.raises(ConfigError) as info:
        suite(**top)
    assert message in str(info.value) and "\n" not in str(info.value)
