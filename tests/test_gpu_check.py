"""benchmarks/gpu_check.py: the one-step rule, the training comparison's tolerance and divergence epoch on fabricated
values, and the script's CPU part (one model per protocol checked and trained twice on the CPU) so it cannot rot on
machines without a GPU."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gpu_check.py"


@pytest.fixture(scope="module")
def gpu_check():
    """The script ``benchmarks/gpu_check.py`` imported as a module (it is not a package module)."""
    module_spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules["gpu_check"] = module  # dataclasses resolve their module by name
    module_spec.loader.exec_module(module)
    yield module
    sys.modules.pop("gpu_check", None)


def run(train, val, metric=50.0):
    """A run's result as the script records it: per-epoch training and validation losses and a final metric."""
    return {"losses": {"train_loss": list(train), "val_loss": list(val)}, "metric": metric}


REF = run([0.70, 0.65, 0.61], [0.69, 0.66, 0.64], 62.5)


def test_identical_runs_agree(gpu_check):
    verdict = gpu_check.compare(REF, run(REF["losses"]["train_loss"], REF["losses"]["val_loss"], 62.5))
    assert verdict == {"loss_diff": 0.0, "metric_diff": 0.0, "ok": True, "reason": ""}


def test_rounding_within_the_tolerance_agrees(gpu_check):
    # cuBLAS / atomic-scatter rounding: a few 1e-5 relative
    other = run([0.70001, 0.65002, 0.61003], [0.69, 0.66001, 0.64002], 62.5)
    verdict = gpu_check.compare(REF, other)
    assert verdict["ok"], verdict["reason"]
    assert 0 < verdict["loss_diff"] < gpu_check.LOSS_RTOL


def test_a_loss_outside_the_tolerance_fails_and_names_the_series(gpu_check):
    other = run([0.70, 0.65, 0.62], REF["losses"]["val_loss"], 62.5)  # 1.6e-2 relative in the last epoch
    verdict = gpu_check.compare(REF, other)
    assert not verdict["ok"]
    assert "train_loss differs by 1.61e-02" in verdict["reason"]
    assert verdict["loss_diff"] == pytest.approx(0.01 / 0.62)


def test_the_tolerance_is_relative_to_the_larger_loss(gpu_check):
    a, b = run([1000.0], [1.0]), run([1000.9], [1.0])  # 9e-4 relative: inside rtol 1e-3
    assert gpu_check.compare(a, b)["ok"]
    assert not gpu_check.compare(a, run([1001.1], [1.0]))["ok"]


def test_missing_epochs_non_finite_losses_and_metrics_fail(gpu_check):
    short = gpu_check.compare(REF, run([0.70, 0.65], REF["losses"]["val_loss"], 62.5))
    assert not short["ok"] and "3 vs 2 epochs" in short["reason"] and math.isinf(short["loss_diff"])
    nan = gpu_check.compare(REF, run([0.70, math.nan, 0.61], REF["losses"]["val_loss"], 62.5))
    assert not nan["ok"] and "train_loss not finite" in nan["reason"]
    metric = gpu_check.compare(REF, run(REF["losses"]["train_loss"], REF["losses"]["val_loss"], 50.0))
    assert not metric["ok"] and "final metric" in metric["reason"] and metric["metric_diff"] == -12.5
    near = gpu_check.compare(REF, run(REF["losses"]["train_loss"], REF["losses"]["val_loss"], 61.0))
    assert near["ok"]  # one item flipped on a tiny evaluation set: within the metric's 5 %


def test_one_step_rule(gpu_check):
    tol = gpu_check.ONE_STEP_RTOL
    ok = gpu_check.one_step_verdict(3e-6, 1e-7, {"conv.weight": 2e-5, "conv.bias": 4e-6})
    assert ok["ok"] and ok["reason"] == "" and ok["grad_param"] == "conv.weight" and ok["grad_diff"] == 2e-5
    bad_grad = gpu_check.one_step_verdict(0.0, 0.0, {"a": 1e-6, "bn.weight": 3 * tol})
    assert not bad_grad["ok"] and bad_grad["grad_param"] == "bn.weight"
    assert "gradient of bn.weight" in bad_grad["reason"]
    bad_out = gpu_check.one_step_verdict(2 * tol, 0.0, {"a": 0.0})
    assert not bad_out["ok"] and "outputs differ" in bad_out["reason"]
    assert not gpu_check.one_step_verdict(0.0, math.inf, {})["ok"]  # a non-finite loss fails
    assert not gpu_check.one_step_verdict(0.0, 0.0, {"w": math.nan})["ok"]  # nan compares false: fails
    assert gpu_check.one_step_verdict(tol, tol, {"w": tol})["ok"]  # the bound itself passes


def test_rel_diff_is_relative_to_the_tensor_scale(gpu_check):
    import torch

    a = torch.tensor([100.0, 1e-6, -50.0])
    assert gpu_check.rel_diff(a, a.clone()) == 0.0
    # the near-zero element changes by 100 % of itself but 1e-8 of the tensor's scale
    assert gpu_check.rel_diff(a, torch.tensor([100.0, 0.0, -50.0])) == pytest.approx(1e-8)
    assert gpu_check.rel_diff(a, torch.tensor([100.0, 1e-6, -50.01])) == pytest.approx(1e-4, rel=1e-3)
    assert gpu_check.rel_diff(torch.zeros(3), torch.zeros(3)) == 0.0
    assert math.isinf(gpu_check.rel_diff(a, torch.tensor([100.0, math.nan, -50.0])))
    assert math.isinf(gpu_check.rel_diff(a, a[:2]))
    # a gradient that is zero up to rounding (a bias before a train-mode BatchNorm): per tensor its noise differs by
    # 100 %, against a floor of the model's scale it is negligible
    noise_a, noise_b = torch.tensor([1e-9, -2e-9]), torch.tensor([-1e-9, 1e-9])
    assert gpu_check.rel_diff(noise_a, noise_b) == pytest.approx(1.5)
    assert gpu_check.rel_diff(noise_a, noise_b, floor=1e-3 * 0.5) == pytest.approx(3e-9 / 5e-4)
    assert gpu_check.rel_diff(a, torch.tensor([100.0, 0.0, -50.01]), floor=1e-6) == pytest.approx(1e-4, rel=1e-3)


def test_divergence_epoch_is_the_first_epoch_out_of_tolerance(gpu_check):
    assert gpu_check.divergence_epoch(REF, REF) is None
    other = run([0.70, 0.65001, 0.63], [0.69, 0.67, 0.70])  # train leaves at epoch 3, val at epoch 2
    assert gpu_check.divergence_epoch(REF, other) == 2
    assert gpu_check.divergence_epoch(REF, run([0.9, 0.65, 0.61], REF["losses"]["val_loss"])) == 1
    # two trainings of 3 epochs one after another: the second leaves at its epoch 2
    twice = run(REF["losses"]["train_loss"] * 2, REF["losses"]["val_loss"] * 2)
    other = run(REF["losses"]["train_loss"] + [0.70, 0.70, 0.70], REF["losses"]["val_loss"] * 2)
    assert gpu_check.divergence_epoch(twice, other, epochs=3) == 2


def test_a_divergence_is_not_a_failure_when_one_step_agrees(gpu_check):
    other = run([0.70, 0.65, 0.62], REF["losses"]["val_loss"], 62.5)
    verdict = gpu_check.compare(REF, other)
    epoch = gpu_check.divergence_epoch(REF, other)
    status, message = gpu_check.training_verdict(verdict, epoch, True, "cuda")
    assert status == "DIVERGES" and message.startswith("diverges from epoch 3 (amplified rounding")
    status, message = gpu_check.training_verdict(verdict, epoch, False, "cuda")
    assert status == "FAIL" and "one-step check failed" in message and "epoch 3" in message
    metric_only = gpu_check.compare(REF, run(REF["losses"]["train_loss"], REF["losses"]["val_loss"], 50.0))
    assert gpu_check.training_verdict(metric_only, None, True, "cuda")[0] == "DIVERGES"


def test_finite_run(gpu_check):
    assert gpu_check.finite_run(REF) == ""
    assert gpu_check.finite_run(run([], [])) == "train_loss: no epochs"
    assert gpu_check.finite_run(run([0.5, math.inf], [0.5, 0.5])) == "train_loss not finite"


def test_seconds_per_epoch_leaves_out_the_first_epoch(gpu_check):
    assert gpu_check.seconds_per_epoch([5.0, 1.0, 2.0]) == 1.5
    assert gpu_check.seconds_per_epoch([5.0]) == 5.0
    assert gpu_check.seconds_per_epoch([]) is None


def test_the_cpu_part_runs_one_model_per_protocol(gpu_check, tmp_path):
    """GCN (benchmarking-gnns PATTERN, pitfalls CSBM) and GIN (benchmarking-gnns, fair-comparison), each trained
    twice on the CPU through the job entry points, and the wide stacks (two P1 seeds of GCN and of GIN, two
    fair-comparison GIN grid points): the two runs must agree exactly, and the stacks must not fall back."""
    status = gpu_check.main(["--devices", "cpu", "cpu", "--quick", "--threads", "1", "--only", "GCN", "GIN",
                             "--out", str(tmp_path)])
    result = json.loads((tmp_path / "gpu_check.json").read_text())
    rows = result["rows"]
    assert {(r["protocol"], r["model"]) for r in rows} == {
        ("benchmarking-gnns", "GCN"), ("benchmarking-gnns", "GIN"), ("pitfalls", "GCN"), ("fair-comparison", "GIN")}
    assert [r["status"] for r in rows] == ["OK"] * 18, [r["error"] for r in rows]
    stacks = {(r["protocol"], r["model"]) for r in rows if r["mode"] == "stack"}
    assert stacks == {("benchmarking-gnns", "GCN"), ("benchmarking-gnns", "GIN"), ("fair-comparison", "GIN")}
    assert status == 0
    steps = [r for r in rows if r["mode"] == "onestep"]
    assert len(steps) == 4 and all(r["device"] == "cpu#2" for r in steps)
    assert all(r[k] == 0.0 for r in steps for k in ("output_diff", "loss_diff", "grad_diff"))
    assert all(r["loss_diff"] == 0.0 and r["diverged_epoch"] is None for r in rows
               if r["device"] == "cpu#2" and r["mode"] in ("compare", "stack"))
    inits = {"pitfalls": gpu_check.PITFALLS_INITS}  # pitfalls: the inits' series one after another
    assert all(len(r["train_losses"]) == len(r["val_losses"]) == 2 * inits.get(r["protocol"], 1)
               for r in rows if r["mode"] == "compare")
    assert all(len(r["train_losses"]) == len(r["val_losses"]) == 2 * 2 for r in rows if r["mode"] == "stack")
    assert (tmp_path / "gpu_check.md").read_text().count("| OK |") == 18
    assert not (tmp_path / "work").exists()
