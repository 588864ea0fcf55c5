"""The GPU path, checked: every model of every protocol gives the same outputs, loss and gradients on each device
for one step from the same weights (the correctness criterion), then trains briefly on each device from the same
seed, and the per-epoch losses are compared.

    python benchmarks/gpu_check.py --out gpu_check                     # CUDA against CPU (a CUDA GPU needed)
    python benchmarks/gpu_check.py --devices cpu cpu --out DIR         # the same check of two CPU runs
    [--quick] [--epochs 3] [--threads N] [--only GCN GIN ...]

One step (mode ``onestep``, run first for every model). The model is built once on the CPU from a fixed seed through
the registry (:func:`gnnbench.models.build.build_model`) and copied to every device; the same batch (the first
four training graphs, or the one graph) goes through it in train mode — BatchNorm with batch statistics, dropout at
0 (DGCNN's fixed dropout with the same masks, see Dropout) — then a fixed random projection of the outputs plus the
model's ``aux_loss`` is the loss, backward, and an eval-mode forward follows. Outputs (both modes), loss and every
parameter gradient must agree: ``max|a − b| / max(|a|, |b|)`` per tensor ≤ ``ONE_STEP_RTOL`` = 1e-4, with TF32 off.
Why 1e-4: both devices compute in float32 (unit rounding 6e-8) and differ only in the order of summation (BLAS
blocking, atomic scatter-adds); the rounding error of a sum of n terms is bounded by about n·6e-8 relative to the
magnitude of its terms, and the sums here (feature widths, node degrees, nodes per batch, a few layers deep,
backward through the same) reach a few hundred to a few thousand terms, so 1e-4 allows the reorderings with margin
while a wrong kernel (a missing term, a wrong index, a BatchNorm over the wrong axis) moves a tensor by far more.
Normalising by the tensor's largest value keeps cancellations near zero from inflating the figure. A gradient much
smaller than the model's largest is a sum with heavy cancellation, so its float32 rounding is large relative to
itself: the biases before a train-mode BatchNorm (zero in exact arithmetic) and GatedGCN's edge-gate weights on
superpixel graphs (about 1e-3 of the largest gradient) can differ between devices by a few percent of their own size
while staying far below 1e-4 of the model's largest gradient, and agree to 1e-12 in float64 (``--float64``;
docs/performance.md#the-gpu-check has the figures). So in float32 a gradient is compared at the scale of the model's
largest gradient (``GRAD_SCALE_FLOOR`` = 1: ``max|a − b| ≤ 1e-4 · max(max|a|, G)``), and ``--float64`` checks the
same way with ``FLOAT64_RTOL`` = 1e-9 (a gradient of 1e-3 G is then checked to 1e-6 of itself) — the check that
tells a wrong kernel from rounding, where every kernel has a float64 form (CUDA's sparse CSR product has none: GCN's
one-step check fails there in float64 with "operation not supported", and the stacked pitfalls models are float32
throughout).

What runs. Tiny datasets from gnnbench's own offline generators (no download), made by the functions the workflow
scripts call (:func:`gnnbench.pipeline.generate_dataset`, ``make_split_file``, ``compute_pe``), then for every model
of each protocol's zoo one short training per device through the public job entry points:

* benchmarking-gnns (:func:`gnnbench.protocols.benchmarking_gnns.train`): MLP GCN GraphSage GAT MoNet GIN GatedGCN
  RingGNN 3WLGNN with their 100k presets on PATTERN (node classification) and MNIST-digits superpixels (graph
  classification with edge features), and GCN with Laplacian positional encodings on CSL. MF is left out: its
  only task is OGBL-COLLAB link prediction, which needs the download.
* pitfalls (:func:`gnnbench.protocols.pitfalls.train.run_chunk`): the ten presets ``pitfalls_*`` on a CSBM graph, one
  split, two initialisations trained as one stacked model (label propagation: one run).
* fair-comparison (:func:`gnnbench.protocols.fair_comparison.train.run_inner`): the presets ``fair_*`` (GIN GraphSAGE
  DGCNN DiffPool ECC MolecularFingerprint DeepMultisets), the first point of each grid, on GRAPH-FAMILIES.
* wide stacks (mode ``stack``, :mod:`gnnbench.training.wide`): the models with a wide form train several runs as one
  stack on each device — benchmarking-gnns MLP GCN GIN GatedGCN on PATTERN, two seeds in one job
  (:func:`gnnbench.protocols.benchmarking_gnns.train.train_seeds` with ``stack=True``), and fair-comparison GIN, two
  grid points of one shape with different learning rates and stopping rules (``run_inner(stack=True)``: one stack, the
  two rules observing one training each). Their losses (the members' series one after another) are compared like
  the single runs', and a run that fell back to training one after another fails the check.

Every run trains ``--epochs`` epochs (no early stop can trigger in so few); the batch size is capped at 4 so every
epoch takes several optimiser steps.

Training (mode ``compare``). The first device of ``--devices`` is the reference; every other device's run of the
same model is compared by its per-epoch training and validation losses, within
``|a − b| ≤ LOSS_ATOL + LOSS_RTOL·max(|a|, |b|)`` (rtol 1e-3), and by its final metric within ``METRIC_RTOL`` (5 %;
a prediction at a near-tie may fall to the other class, and on these tiny evaluation sets one graph or node moves an
accuracy by up to a few percent).
The results are not bit-exact across devices: cuBLAS and the CPU's BLAS sum matrix products in different orders,
CUDA's scatter/index_add kernels add with atomics in an unspecified order, and Adam turns such rounding into small
weight differences that grow over the epochs (Adam turns a near-zero gradient into a ±lr step; a large SGD rate
or a tie in max aggregation does the like). A run that leaves the tolerance is therefore judged by its model's
one-step check: passed → ``DIVERGES`` from the first epoch out of tolerance (amplified rounding, not a failure);
failed → ``FAIL``. Errors and non-finite losses always fail. Two runs on the CPU in one process
(``--devices cpu cpu``) go through the same comparisons; they agree to the bit, which checks determinism.

Dropout. Dropout masks come from each device's own random generator (CPU: Mersenne Twister; CUDA: Philox), so one
seed gives different masks on the two devices and runs with dropout cannot agree. The compared runs therefore set
every dropout rate of the config to 0, and route ``torch.nn.functional.dropout`` (DGCNN's fixed Dropout(0.5) has no
config key) through a CPU generator seeded per run, so its masks are the same on every device. Without ``--quick``
each model whose config has dropout also trains once per device with its preset dropout (mode ``dropout``), which
runs gnnbench's own dropout-mask kernels on the device: its losses must be finite, and are compared only when all
devices are of one type (the same generator then draws the same masks).

Reported per model: the one-step differences (largest output difference, loss difference, largest gradient
difference and its parameter); per model and device: the per-epoch losses (JSON), seconds per epoch (mean over
the epochs after the first, which pays CUDA's kernel start-up), peak CUDA memory (``torch.cuda.max_memory_allocated``,
reset before each run), the largest relative loss difference against the reference device, the first epoch out of
tolerance, the final metric, OK / DIVERGES / FAIL and, for a run that raised, the last line of its traceback
(the check goes on with the next model). Written to ``--out`` as ``gpu_check.md`` and ``gpu_check.json``; exit
status 1 if any row is FAIL.

Needs torch, numpy, pandas, pyarrow, scipy, scikit-learn, scikit-image and PyYAML; not Snakemake, elkai or ogb
(nothing it imports needs them). gnnbench need not be installed: the script puts the repository root on the path.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import shutil
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # gnnbench from the repository root, when not installed

LOSS_RTOL, LOSS_ATOL = 1e-3, 1e-6
METRIC_RTOL, METRIC_ATOL = 5e-2, 1e-6
DROPOUT_KEYS = ("dropout", "dropout_prob", "input_dropout_prob", "coefficient_dropout_prob", "in_feat_dropout",
                "dropout_final")
FIXED_DROPOUT_MODELS = ("DGCNN",)  # a dropout layer without a config key (DGCNN's Dropout(0.5) before its output)
MAX_BATCH = 4
ONE_STEP_RTOL = 1e-4  # module docstring, One step
ONE_STEP_DTYPE: list = [None]  # [torch.float64] with --float64
GRAD_SCALE_FLOOR = 1.0  # float32: a gradient's scale is at least the model's largest gradient (module docstring)
FLOAT64_RTOL = 1e-9  # --float64: every tensor at its own scale
ONE_STEP_SEED = 12345

# name → (generator, params, split scheme + params, Laplacian PE dimensions to compute)
DATASETS = {
    "PATTERN": ("sbm_pattern", {"num_train": 8, "num_val": 4, "num_test": 4, "num_patterns": 4,
                                "community_size": [5, 10], "pattern_size": [5, 10]}, {"scheme": "given"}, ()),
    "MNIST-digits": ("superpixels_digits", {"num_train": 8, "num_val": 4, "num_test": 4, "n_sp": 40},
                     {"scheme": "given"}, ()),
    "CSL": ("csl", {"copies_per_class": 5},
            {"scheme": "stratified_kfold", "folds": 5, "val_fraction": 0.25, "seed": 1}, (20,)),
    "CSBM": ("csbm", {"num_nodes": 300, "num_classes": 3},
             {"scheme": "random_per_class", "splits": 1, "seed": 2018}, ()),
    "GRAPH-FAMILIES": ("graph_families", {"num_graphs": 60, "features": "degree"},
                       {"scheme": "stratified_kfold", "folds": 3, "val_fraction": 0.1, "seed": 0}, ()),
}
P1_MODELS = ("MLP", "GCN", "GraphSage", "GAT", "MoNet", "GIN", "GatedGCN", "RingGNN", "3WLGNN")
PITFALLS_MODELS = ("GCN", "GAT", "MoNet", "GS-mean", "GS-maxpool", "GS-meanpool", "MLP", "LogReg", "LabelProp",
                   "LabelProp-NL")
FAIR_PRESETS = {"GIN": "fair_GIN", "GraphSAGE": "fair_GraphSAGE", "DGCNN": "fair_DGCNN", "DiffPool": "fair_DiffPool",
                "ECC": "fair_ECC", "MolecularFingerprint": "fair_Baseline_chemical",
                "DeepMultisets": "fair_Baseline_social"}
PITFALLS_INITS = 2
STACK_P1_MODELS = ("MLP", "GCN", "GIN", "GatedGCN")  # benchmark models with a wide form (gnnbench.training.wide)
STACK_FAIR_MODELS = ("GIN",)
STACK_SEEDS = (41, 42)


@dataclass
class Case:
    """One model trained on every device: protocol, dataset, label, preset, config overrides, mode."""

    protocol: str
    dataset: str
    model: str
    preset: str
    mode: str = "compare"  # compare: dropout off, results compared; dropout: the preset's dropout; stack: wide stack
    pe_dim: int | None = None
    config: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------- comparison


def max_rel_diff(a, b) -> float:
    """Largest ``|a − b| / max(|a|, |b|)`` over two equally long series (0 where both are 0; inf if not finite)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.size == 0:
        return 0.0
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return math.inf
    scale = np.maximum(np.abs(a), np.abs(b))
    diff = np.abs(a - b)
    return float(np.max(np.where(scale > 0, diff / np.where(scale > 0, scale, 1.0), 0.0)))


def within(a, b, rtol: float, atol: float) -> bool:
    """Every element: ``|a − b| ≤ atol + rtol·max(|a|, |b|)``, all finite."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return False
    return bool(np.all(np.abs(a - b) <= atol + rtol * np.maximum(np.abs(a), np.abs(b))))


def compare(ref: dict, other: dict, *, loss_rtol: float = LOSS_RTOL, loss_atol: float = LOSS_ATOL,
            metric_rtol: float = METRIC_RTOL, metric_atol: float = METRIC_ATOL) -> dict:
    """Agreement of two runs of one model: ``{"loss_diff", "metric_diff", "ok", "reason"}``.

    A run is ``{"losses": {series: [per-epoch values]}, "metric": final score}``; every series of ``ref`` must exist
    in ``other`` with as many epochs and agree within the loss tolerance, and the metrics within theirs."""
    reasons, worst = [], 0.0
    for name, values in ref["losses"].items():
        theirs = other["losses"].get(name)
        if theirs is None or len(theirs) != len(values):
            reasons.append(f"{name}: {len(values)} vs {'no' if theirs is None else len(theirs)} epochs")
            worst = math.inf
            continue
        worst = max(worst, max_rel_diff(values, theirs))
        if not within(values, theirs, loss_rtol, loss_atol):
            finite = np.isfinite(np.asarray(values, dtype=float)).all() and np.isfinite(
                np.asarray(theirs, dtype=float)).all()
            reasons.append(f"{name} differs by {max_rel_diff(values, theirs):.2e} relative (tolerance {loss_rtol:g})"
                           if finite else f"{name} not finite")
    a, b = ref.get("metric"), other.get("metric")
    metric_diff = None
    if a is not None or b is not None:
        if a is None or b is None or not within([a], [b], metric_rtol, metric_atol):
            reasons.append(f"final metric {a} vs {b} (tolerance {metric_rtol:g} relative)")
        if a is not None and b is not None:
            metric_diff = float(b) - float(a)
    return {"loss_diff": worst, "metric_diff": metric_diff, "ok": not reasons, "reason": "; ".join(reasons)}


def divergence_epoch(ref: dict, other: dict, *, loss_rtol: float = LOSS_RTOL, loss_atol: float = LOSS_ATOL,
                     epochs: int | None = None) -> int | None:
    """The first epoch (1-based) at which any loss series of the two runs leaves the loss tolerance, or None.
    ``epochs``: the epochs of one training when a series holds several one after another (pitfalls' inits)."""
    first = None
    for name, values in ref["losses"].items():
        theirs = other["losses"].get(name) or []
        for index, (a, b) in enumerate(zip(values, theirs, strict=False)):
            if not within([a], [b], loss_rtol, loss_atol):
                epoch = index % epochs + 1 if epochs else index + 1
                first = epoch if first is None else min(first, epoch)
    return first


def finite_run(result: dict) -> str:
    """Why a run's losses are unusable ('' if every loss is finite and there is at least one epoch)."""
    for name, values in result["losses"].items():
        if len(values) == 0:
            return f"{name}: no epochs"
        if not np.isfinite(np.asarray(values, dtype=float)).all():
            return f"{name} not finite"
    return ""

# ---------------------------------------------------------------------------------------------- one-step check


def rel_diff(a, b, floor: float = 0.0) -> float:
    """``max|a − b| / max(max|a|, max|b|, floor)`` of two equally shaped tensors (0 where the scale is 0; inf if not
    finite or shaped differently): the error relative to the tensor's scale, so elements near zero (cancellations) do
    not inflate it; ``floor`` bounds the scale from below for tensors that are zero up to rounding."""
    import torch

    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    if a.shape != b.shape or not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        return math.inf
    if a.numel() == 0:
        return 0.0
    scale = max(float(a.abs().max()), float(b.abs().max()), floor)
    return float((a - b).abs().max()) / scale if scale > 0 else 0.0


def one_step_verdict(outputs: float, loss: float, grads: dict[str, float], tol: float = ONE_STEP_RTOL) -> dict:
    """The one-step rule on the measured differences: every one (outputs, loss, each parameter's gradient) ≤ ``tol``.
    ``{"output_diff", "loss_diff", "grad_diff", "grad_param", "ok", "reason"}``."""
    param, grad = max(grads.items(), key=lambda kv: kv[1]) if grads else (None, 0.0)
    reasons = [f"{name} differs by {value:.2e} (tolerance {tol:g})"
               for name, value in (("outputs", outputs), ("loss", loss), (f"gradient of {param}", grad))
               if not value <= tol]
    return {"output_diff": outputs, "loss_diff": loss, "grad_diff": grad, "grad_param": param, "ok": not reasons,
            "reason": "; ".join(reasons)}


def _flat_outputs(out) -> list:
    return [t for t in (out if isinstance(out, (tuple, list)) else [out]) if hasattr(t, "dtype")]


def _one_step_on(model, batch, seed: int) -> dict:
    """Train-mode forward (BatchNorm with batch statistics), a fixed smooth loss, backward; then an eval-mode forward.
    The loss is a fixed random projection of the outputs (drawn on the CPU: the same on every device) plus the model's
    ``aux_loss``: any smooth scalar of the outputs drives the same backward kernels as the training loss does."""
    import torch

    model.train()
    model.zero_grad(set_to_none=True)
    with device_independent_dropout(seed):
        outs = _flat_outputs(model(batch))
    generator = torch.Generator().manual_seed(seed)
    loss = sum((o * torch.randn(o.shape, generator=generator, dtype=o.dtype if o.is_floating_point() else None)
                .to(o.device)).sum() / max(o.numel(), 1) for o in outs)
    aux = getattr(model, "aux_loss", 0.0)
    loss = loss + (aux if torch.is_tensor(aux) else float(aux))
    loss.backward()
    grads = {name: p.grad for name, p in model.named_parameters() if p.requires_grad}
    model.eval()
    with torch.no_grad():
        eval_outs = _flat_outputs(model(batch))
    return {"outputs": outs + eval_outs, "loss": loss.detach(), "grads": grads}


def one_step_models(case: Case, data: dict, devices: list[str]) -> list:
    """The model of ``case`` on every device with the same weights, and the batch each device sees: built once on the
    CPU (seeded) through the registry and copied; Shchur's stacked models are bound to their device's graph, so they
    are built per device and given the CPU weights. The batch: the first ``MAX_BATCH`` training graphs (the whole
    graph for a one-graph dataset)."""
    import copy

    import torch

    from gnnbench.data.batching import GraphLoader, model_dtypes
    from gnnbench.data.meta import read_dataset
    from gnnbench.data.store import GraphStore
    from gnnbench.models.build import ModelData, build_model
    from gnnbench.splits import read_splits

    variant = {"benchmarking-gnns": "dwivedi2020", "pitfalls": "shchur2018", "fair-comparison": "errica2020"}
    meta, columns = read_dataset(data["data"])
    store = model_dtypes(GraphStore.from_columns(columns))
    pe = None
    if case.pe_dim:
        from gnnbench.training.last_epoch import read_run_pe

        pe = read_run_pe(case.config, data["pe"][case.pe_dim], store, meta)
    if meta.transductive:
        ids = torch.zeros(1, dtype=torch.int64)
    else:
        ids = torch.as_tensor(read_splits(data["splits"], meta).fold(0)["train"][:MAX_BATCH], dtype=torch.int64)
    batch = GraphLoader(store, ids, len(ids), pe=pe).collate(ids)
    kwargs = {"default_variant": variant[case.protocol]}
    torch.manual_seed(ONE_STEP_SEED)
    if case.protocol == "pitfalls":
        from gnnbench.protocols.pitfalls.train import load_node_graph

        reference = build_model(case.config, ModelData(meta, graph=load_node_graph(data["data"])[1]),
                                seed=ONE_STEP_SEED, **kwargs)
        models = []
        for device in devices:
            model = build_model(case.config, ModelData(meta, graph=load_node_graph(data["data"], device)[1]),
                                seed=ONE_STEP_SEED, **kwargs).to(device)
            model.load_state_dict(reference.state_dict())
            models.append(model)
    else:
        reference = build_model(case.config, ModelData(meta, np.asarray(columns.num_nodes, dtype=np.int64), store),
                                **kwargs)
        models = [copy.deepcopy(reference).to(device) for device in devices]
    if ONE_STEP_DTYPE[0] is torch.float64:  # --float64: the kernels' arithmetic without float32 rounding
        import dataclasses

        models = [m.double() for m in models]
        batch = dataclasses.replace(batch, **{f.name: getattr(batch, f.name).double()
                                              for f in dataclasses.fields(batch)
                                              if torch.is_tensor(getattr(batch, f.name))
                                              and getattr(batch, f.name).is_floating_point()})
    return [(model, batch.to(device)) for model, device in zip(models, devices, strict=True)]


@contextlib.contextmanager
def float32_only():
    """TF32 off (matrix products and cuDNN convolutions in full float32) for the one-step check."""
    import torch

    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def one_step(case: Case, devices: list[str], data: dict) -> list[dict]:
    """The one-step check of ``case``'s model: one row per device after the first, with its differences against the
    first device and OK / FAIL."""
    base = {"protocol": case.protocol, "dataset": case.dataset, "model": case.model, "preset": case.preset,
            "mode": "onestep"}
    names = [d if devices.count(d) == 1 else f"{d}#{i + 1}" for i, d in enumerate(devices)]
    if ONE_STEP_DTYPE[0] is not None and case.protocol == "pitfalls":  # the stacked form is float32 throughout
        return [{**base, "device": n, "status": "OK", "error": "stacked model: float32 only, no float64 check"}
                for n in names[1:]]
    start = time.perf_counter()
    try:
        with float32_only():
            results = [_one_step_on(model, batch, ONE_STEP_SEED) for model, batch in one_step_models(case, data,
                                                                                                   devices)]
    except Exception as exc:  # noqa: BLE001 (reported; the check goes on)
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        if "has no weights" in last:
            return [{**base, "device": n, "status": "OK", "error": "no weights: no one-step check"} for n in names[1:]]
        traceback.print_exc(limit=-3)
        return [{**base, "device": n, "status": "FAIL", "error": last} for n in names[1:]]
    wall = time.perf_counter() - start
    ref, rows = results[0], []
    for name, res in zip(names[1:], results[1:], strict=True):
        if len(res["outputs"]) != len(ref["outputs"]) or res["grads"].keys() != ref["grads"].keys():
            rows.append({**base, "device": name, "status": "FAIL", "error": "outputs or parameters differ in kind"})
            continue
        grads = {}
        model_scale = max((float(g.detach().abs().max()) for g in ref["grads"].values()
                           if g is not None and g.numel()), default=0.0)
        float64 = ONE_STEP_DTYPE[0] is not None
        floor, tol = GRAD_SCALE_FLOOR * model_scale, FLOAT64_RTOL if float64 else ONE_STEP_RTOL
        for key, g in ref["grads"].items():
            h = res["grads"][key]
            grads[key] = (0.0 if g is None and h is None else math.inf if g is None or h is None
                          else rel_diff(g, h, floor))
        verdict = one_step_verdict(max((rel_diff(a, b) for a, b in zip(ref["outputs"], res["outputs"], strict=True)),
                                       default=0.0), rel_diff(ref["loss"], res["loss"]), grads, tol)
        # the five worst gradients with their own scale and |a − b|, both relative to the model's largest gradient
        # (JSON only): tells rounding noise of a gradient that is zero in exact arithmetic from a wrong kernel
        model_scale = model_scale or 1.0
        worst = sorted(grads, key=grads.get, reverse=True)[:5]
        detail = [{"parameter": k, "rel_diff": grads[k],
                   "scale_vs_model": float(ref["grads"][k].detach().abs().max()) / model_scale,
                   "abs_diff_vs_model": float((ref["grads"][k].detach().double().cpu()
                                               - res["grads"][k].detach().double().cpu()).abs().max()) / model_scale}
                  for k in worst if ref["grads"][k] is not None and res["grads"][k] is not None]
        rows.append({**base, "device": name, "output_diff": verdict["output_diff"], "loss_diff": verdict["loss_diff"],
                     "grad_diff": verdict["grad_diff"], "grad_param": verdict["grad_param"],
                     "status": "OK" if verdict["ok"] else "FAIL", "error": verdict["reason"], "wall_seconds": wall,
                     "grad_detail": detail})
    return rows


# ---------------------------------------------------------------------------------------------- data and cases


def make_datasets(root: Path, names: list[str]) -> dict[str, dict]:
    """Generate the named datasets, their split files and PE files under ``root`` (the workflow's functions)."""
    from gnnbench.data.generators import get_generator, resolve_params
    from gnnbench.pipeline import compute_pe, generate_dataset, make_split_file

    made = {}
    for name in names:
        generator, params, split, pe_dims = DATASETS[name]
        start = time.perf_counter()
        folder = root / name
        generate_dataset(generator, name, params, 1, folder / "data", raw_dir=root / "raw")
        default = get_generator(generator).default_split
        if callable(default):
            default = default(resolve_params(get_generator(generator), params, name))
        split = {**default, **split} if default.get("scheme") == split["scheme"] else dict(split)
        make_split_file(folder / "data", split.pop("scheme"), split, folder / "splits.json")
        pe = {}
        for k in pe_dims:
            pe[k] = folder / f"pe{k}.npz"
            compute_pe(folder / "data", k, pe[k])
        made[name] = {"data": folder / "data", "splits": folder / "splits.json", "pe": pe}
        print(f"dataset {name}: {time.perf_counter() - start:.1f}s", flush=True)
    return made


def p1_preset(model: str, dataset: str) -> str:
    """The 100k benchmarking-gnns preset of ``model`` for one of the check's datasets (PATTERN, MNIST-digits, CSL with
    PE)."""
    if dataset == "PATTERN":
        return f"SBMs_node_clustering_{model}_PATTERN_100k"
    if dataset == "MNIST-digits":
        return f"superpixels_graph_classification_{model}_MNIST_100k"
    return f"CSL_graph_classification_{model}_CSL_PE_100k"


def build_cases(quick: bool, epochs: int, only: list[str] | None) -> list[Case]:
    """Every model of the three zoos as cases with their run configs (modes ``compare`` and, unless quick,
    ``dropout``)."""
    from gnnbench.config.presets import run_config
    from gnnbench.protocols.fair_comparison.plan import model_grid

    cases: list[Case] = []
    p1_sets = [("PATTERN", P1_MODELS)] + ([] if quick else [("MNIST-digits", P1_MODELS), ("CSL", ("GCN",))])
    for dataset, models in p1_sets:
        for model in models:
            preset = p1_preset(model, dataset)
            config = run_config(preset, {"epochs": epochs, "seed": 41})
            config["batch_size"] = min(int(config["batch_size"]), MAX_BATCH)
            cases.append(Case("benchmarking-gnns", dataset, model, preset, config=config,
                              pe_dim=config.get("pos_enc_dim") if config.get("pos_enc") else None))
    for model in PITFALLS_MODELS:
        preset = f"pitfalls_{model}"
        cases.append(Case("pitfalls", "CSBM", model, preset,
                          config=run_config(preset, {"num_epochs": epochs}, protocol="pitfalls")))
    for model, preset in FAIR_PRESETS.items():
        base, grid = model_grid({"preset": preset}, {"epochs": epochs, "patience": 10 * epochs},
                                f"gpu_check.{model}")
        config = {**base, **{key: values[0] for key, values in grid.items()}}
        config["batch_size"] = min(int(config["batch_size"]), MAX_BATCH)
        cases.append(Case("fair-comparison", "GRAPH-FAMILIES", model, preset, config=config))
    cases += stack_cases(cases)
    if only:
        cases = [c for c in cases if c.model in only]
    compared = []
    for case in cases:
        rates = {k: v for k, v in case.config.items() if k in DROPOUT_KEYS and float(v) > 0}
        if case.mode == "stack":
            case.config.update({k: 0.0 for k in rates})
            continue
        if not quick and (rates or case.model in FIXED_DROPOUT_MODELS and case.protocol == "fair-comparison"):
            compared.append(Case(case.protocol, case.dataset, case.model, case.preset, "dropout", case.pe_dim,
                                 dict(case.config)))
        case.config.update({k: 0.0 for k in rates})
    return cases + compared


def stack_cases(cases: list[Case]) -> list[Case]:
    """The wide-stack cases (module docstring), from the PATTERN and fair-comparison cases' configs: P1 as is (its
    seeds are the job's), fair-comparison as two grid points of one shape."""
    stacked = []
    for case in cases:
        if case.protocol == "benchmarking-gnns" and case.dataset == "PATTERN" and case.model in STACK_P1_MODELS:
            stacked.append(Case(case.protocol, case.dataset, case.model, case.preset, "stack", None, dict(case.config)))
        elif case.protocol == "fair-comparison" and case.model in STACK_FAIR_MODELS:
            first = {k: 0.0 if k in DROPOUT_KEYS else v for k, v in case.config.items()}
            second = {**first, "learning_rate": float(first["learning_rate"]) / 2,
                      "early_stopping": "loss" if first.get("early_stopping") == "accuracy" else "accuracy"}
            stacked.append(Case(case.protocol, case.dataset, case.model, case.preset, "stack", None,
                                {"configs": [first, second]}))
    return stacked


def run_stack_case(case: Case, device: str, data: dict, out: Path, threads: int) -> dict:
    """Train ``case``'s runs as one wide stack on ``device``: its members' losses one after another; raises when
    the runs did not train as a wide stack."""
    import pyarrow.parquet as pq

    if case.protocol == "benchmarking-gnns":
        from gnnbench.protocols.benchmarking_gnns.train import train_seeds

        dirs = [out / f"seed{s}" for s in STACK_SEEDS]
        metrics = train_seeds(dataset_dir=data["data"], splits_path=data["splits"], fold=0, config=case.config,
                              seeds=list(STACK_SEEDS), out_dirs=dirs, device=device, threads=threads,
                              label=case.model, stack=True)
        if not all(m.get("stack", {}).get("wide") for m in metrics):
            raise RuntimeError("the seeds did not train as one wide stack")
        histories = [pq.read_table(d / "history.parquet").to_pandas() for d in dirs]
        return {"losses": {part: [v for h in histories for v in h[part]] for part in ("train_loss", "val_loss")},
                "metric": float(np.mean([m["test"]["metric"] for m in metrics])),
                "metric_name": f"test {metrics[0]['metric']} (mean of seeds)", "epochs": len(histories[0]),
                "seconds": list(histories[0]["seconds"])}
    from gnnbench.protocols.fair_comparison.train import kept_runs, run_inner

    configs = case.config["configs"]
    run_inner(dataset_dir=data["data"], splits_path=data["splits"], fold=0, configs=configs,
              positions=list(range(len(configs))), seed=0, out=out / "part0.parquet", device=device,
              threads=threads, stack=True)
    rows = pq.read_table(out / "part0.parquet").to_pylist()
    results = kept_runs(out / "part0.parquet")
    if len(results) != len(configs) or not all("stack" in r for r in results):
        raise RuntimeError("the grid points did not train as one wide stack")
    results.sort(key=lambda r: json.dumps(r["config"], sort_keys=True))
    histories = [r["history"] for r in results]
    return {"losses": {part: [h[part] for history in histories for h in history]
                       for part in ("train_loss", "val_loss")},
            "metric": float(np.mean([r["val_accuracy"] for r in rows])),
            "metric_name": "val accuracy (mean of the grid points)", "epochs": len(histories[0]),
            "seconds": [h["seconds"] for h in histories[0]]}


# ---------------------------------------------------------------------------------------------- running


@contextlib.contextmanager
def device_independent_dropout(seed: int):
    """``torch.nn.functional.dropout`` with masks drawn on the CPU from a generator seeded with ``seed`` and then
    moved to the input's device: the same masks on every device (module docstring, Dropout)."""
    import torch
    import torch.nn.functional as F

    original = F.dropout
    generator = torch.Generator().manual_seed(seed)

    def dropout(input, p=0.5, training=True, inplace=False):  # noqa: A002 (torch's signature)
        if not training or p == 0.0:
            return original(input, p, training, inplace)
        keep = torch.rand(input.shape, generator=generator) >= p
        mask = keep.to(device=input.device, dtype=input.dtype).div_(1.0 - p)
        return input.mul_(mask) if inplace else input * mask

    F.dropout = dropout
    try:
        yield
    finally:
        F.dropout = original


def run_case(case: Case, device: str, data: dict, out: Path, threads: int) -> dict:
    """Train ``case`` once on ``device`` through its protocol's job entry point; its losses, metric and timings."""
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    if case.mode == "stack":
        return run_stack_case(case, device, data, out, threads)
    if case.protocol == "benchmarking-gnns":
        from gnnbench.protocols.benchmarking_gnns.train import train

        fold = 0
        pe = data["pe"].get(case.pe_dim) if case.pe_dim else None
        metrics = train(dataset_dir=data["data"], splits_path=data["splits"], fold=fold, config=case.config,
                        out_dir=out, pe_path=pe, device=device, threads=threads, label=case.model)
        history = pq.read_table(out / "history.parquet").to_pandas()
        seconds = list(history["seconds"])
        return {"losses": {"train_loss": list(history["train_loss"]), "val_loss": list(history["val_loss"])},
                "metric": metrics["test"]["metric"], "metric_name": f"test {metrics['metric']}",
                "epochs": len(history), "seconds": seconds}
    if case.protocol == "pitfalls":
        from gnnbench.protocols.pitfalls.train import run_chunk

        metrics = run_chunk(dataset_dir=data["data"], splits_path=data["splits"], splits=[0], config=case.config,
                            inits=PITFALLS_INITS, seed=0, out_dir=out, device=device, threads=threads,
                            label=case.model)
        history = pq.read_table(out / "history.parquet").to_pandas()
        history = history.sort_values([c for c in ("split", "init", "epoch") if c in history.columns])
        epochs = int(history["epoch"].max()) + 1
        return {"losses": {"train_loss": list(history["train_loss"]), "val_loss": list(history["val_loss"])},
                "metric": metrics["test_accuracy_mean"], "metric_name": "test accuracy (mean of inits)",
                "epochs": epochs, "seconds": [metrics["train_seconds"] / max(epochs, 1)] * epochs}
    from gnnbench.protocols.fair_comparison.train import kept_runs, run_inner

    run_inner(dataset_dir=data["data"], splits_path=data["splits"], fold=0, configs=[case.config], positions=[0],
              seed=0, out=out / "part0.parquet", device=device, threads=threads)
    row = pq.read_table(out / "part0.parquet").to_pylist()[0]
    history = kept_runs(out / "part0.parquet")[0]["history"]
    return {"losses": {"train_loss": [h["train_loss"] for h in history], "val_loss": [h["val_loss"] for h in history]},
            "metric": row["val_accuracy"], "metric_name": "val accuracy (early-stopping epoch)",
            "epochs": len(history), "seconds": [h["seconds"] for h in history]}


def seconds_per_epoch(seconds: list[float]) -> float | None:
    """Mean over the epochs after the first (the first pays start-up), or the one epoch there is."""
    if not seconds:
        return None
    return float(np.mean(seconds[1:] if len(seconds) > 1 else seconds))


def check(cases: list[Case], devices: list[str], datasets: dict, work: Path, threads: int) -> list[dict]:
    """Run every case on every device; one row per (case, device) with the comparison against ``devices[0]``."""
    import torch

    rows = []
    step_ok: dict[tuple, bool] = {}
    for number, case in enumerate(cases):
        key = (case.protocol, case.dataset, case.model)
        if key not in step_ok:  # the one-step check first: the criterion of correctness
            step_rows = one_step(case, devices, datasets[case.dataset])
            step_ok[key] = all(r["status"] == "OK" for r in step_rows)
            for row in step_rows:
                print(f"{row['protocol']:>17} {row['dataset']:>14} {row['model']:>20} onestep {row['device']:>7} "
                      f"out {fmt(row.get('output_diff'), '.1e')} loss {fmt(row.get('loss_diff'), '.1e')} "
                      f"grad {fmt(row.get('grad_diff'), '.1e')} ({row.get('grad_param')}) {row['status']} "
                      f"{row['error']}", flush=True)
            rows += step_rows
        results: list[dict | None] = []
        case_rows = []
        for index, device in enumerate(devices):
            row = {"protocol": case.protocol, "dataset": case.dataset, "model": case.model, "preset": case.preset,
                   "mode": case.mode, "device": device if devices.count(device) == 1 else f"{device}#{index + 1}",
                   "seconds_per_epoch": None, "peak_cuda_mib": None, "epochs": None, "metric": None,
                   "metric_name": None, "loss_diff": None, "metric_diff": None, "status": "OK", "error": ""}
            cuda = device.startswith("cuda")
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
            start = time.perf_counter()
            try:
                same_masks = case.mode in ("compare", "stack")
                with device_independent_dropout(1000 + number) if same_masks else contextlib.nullcontext():
                    result = run_case(case, device, datasets[case.dataset], work / f"case{number}" / f"dev{index}",
                                      threads)
            except Exception as exc:  # one model's failure must not hide the others'
                last = traceback.format_exception_only(type(exc), exc)[-1].strip()
                row.update(status="FAIL", error=last)
                result = None
                print(f"  {case.protocol} {case.model} on {device}: {last}", flush=True)
                traceback.print_exc(limit=-3)
            if cuda:
                row["peak_cuda_mib"] = torch.cuda.max_memory_allocated() / 2**20
            wall = time.perf_counter() - start
            if result is not None:
                row.update(seconds_per_epoch=seconds_per_epoch(result["seconds"]), epochs=result["epochs"],
                           metric=result["metric"], metric_name=result["metric_name"],
                           final_train_loss=result["losses"]["train_loss"][-1] if result["losses"]["train_loss"]
                           else None)
                problem = finite_run(result)
                if problem:
                    row.update(status="FAIL", error=problem)
            row["wall_seconds"] = wall
            if result is not None:
                row.update(train_losses=list(result["losses"]["train_loss"]),
                           val_losses=list(result["losses"]["val_loss"]))
            results.append(result)
            case_rows.append(row)
        comparable = case.mode in ("compare", "stack") or len({d.split(":")[0] for d in devices}) == 1
        for row, result in zip(case_rows[1:], results[1:], strict=True):
            if result is None or results[0] is None or not comparable:
                continue
            verdict = compare(results[0], result)
            epoch = divergence_epoch(results[0], result, epochs=results[0]["epochs"])
            row.update(loss_diff=verdict["loss_diff"], metric_diff=verdict["metric_diff"], diverged_epoch=epoch)
            if not verdict["ok"] and row["status"] == "OK":
                status, error = training_verdict(verdict, epoch, step_ok[key], case_rows[0]["device"])
                row.update(status=status, error=error)
        if results[0] is None and any(r is not None for r in results[1:]):
            for row in case_rows[1:]:
                if row["status"] == "OK":
                    row["error"] = f"not compared: {case_rows[0]['device']} failed"
        for row in case_rows:
            print(f"{row['protocol']:>17} {row['dataset']:>14} {row['model']:>20} {row['mode']:>7} "
                  f"{row['device']:>7} {fmt(row['seconds_per_epoch'], '.3f'):>7}s/ep "
                  f"{fmt(row['peak_cuda_mib'], '.0f'):>6}MiB Δloss {fmt(row['loss_diff'], '.1e'):>8} "
                  f"{row['status']} {row['error']}", flush=True)
        rows += case_rows
    return rows


def training_verdict(verdict: dict, epoch: int | None, step_passed: bool, reference: str) -> tuple[str, str]:
    """(status, message) of a training comparison that left the tolerance: DIVERGES (not a failure) when the
    model's one-step check passed, so the difference is rounding amplified over the steps; FAIL otherwise."""
    where = f"diverges from epoch {epoch}" if epoch is not None else "final metric differs"
    if step_passed:
        return "DIVERGES", f"{where} (amplified rounding; one step agrees): {verdict['reason']}"
    return "FAIL", f"disagrees with {reference}, {where}, and the one-step check failed: {verdict['reason']}"


# ---------------------------------------------------------------------------------------------- output


def fmt(value, spec: str) -> str:
    """``value`` formatted with ``spec``, or a dash for None."""
    return "–" if value is None else format(value, spec)


def markdown(rows: list[dict], header: dict) -> str:
    """The report as a Markdown page: a header with the settings, the one-step table, then the training table."""
    lines = [f"# GPU check: {header['devices']}", "",
             f"{header['date']}, torch {header['torch']}, {header['device_names']}, {header['threads']} CPU threads, "
             f"{header['epochs']} epochs per run, {header['total_seconds']:.0f}s in all. Losses compared per epoch "
             f"(training and validation) against `{header['reference']}`: |a−b| ≤ {LOSS_ATOL:g} + {LOSS_RTOL:g}"
             f"·max(|a|,|b|); final metric within {METRIC_RTOL:g} relative. Mode `compare`: dropout off (masks are "
             "per-device random streams); `dropout`: the preset's dropout, finite losses required.", "",
             "## One step (the correctness criterion)", "",
             f"Same weights and batch on every device, train mode (BatchNorm batch statistics) then eval mode, float32 "
             f"(TF32 off); max |a−b| / max |a| per tensor ≤ {ONE_STEP_RTOL:g} for outputs, loss and every gradient.",
             "", "| protocol | dataset | model | device | max output diff | loss diff | max grad diff | parameter | "
             "result | error |", "|---|---|---|---|---:|---:|---:|---|---|---|"]
    for r in rows:
        if r["mode"] == "onestep":
            lines.append(f"| {r['protocol']} | {r['dataset']} | {r['model']} | {r['device']} | "
                         f"{fmt(r.get('output_diff'), '.2e')} | {fmt(r.get('loss_diff'), '.2e')} | "
                         f"{fmt(r.get('grad_diff'), '.2e')} | {r.get('grad_param') or '–'} | {r['status']} | "
                         f"{r['error'].replace('|', '/')} |")
    lines += ["", "## Training", "",
              "DIVERGES: the losses leave the tolerance from the epoch named although one step agrees: rounding "
              "amplified over the optimiser steps, not a failure. Per-epoch losses of every run: gpu_check.json.", "",
              "| protocol | dataset | model | mode | device | s/epoch | peak CUDA MiB | max rel. loss diff | metric | "
              "result | error |",
              "|---|---|---|---|---|---:|---:|---:|---:|---|---|"]
    for r in rows:
        if r["mode"] == "onestep":
            continue
        lines.append(f"| {r['protocol']} | {r['dataset']} | {r['model']} | {r['mode']} | {r['device']} | "
                     f"{fmt(r['seconds_per_epoch'], '.4f')} | {fmt(r['peak_cuda_mib'], '.1f')} | "
                     f"{fmt(r['loss_diff'], '.2e')} | {fmt(r['metric'], '.4g')} | {r['status']} | "
                     f"{r['error'].replace('|', '/')} |")
    failed, diverged = (sum(r["status"] == s for r in rows) for s in ("FAIL", "DIVERGES"))
    lines += ["", f"{len(rows)} rows: {failed} failed, {diverged} diverge from amplified rounding"
              + ("." if failed else " — no failure.")]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the check (module docstring), write ``gpu_check.md`` and ``gpu_check.json`` under ``--out``; returns 1 if a
    row failed or none ran, else 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="folder for gpu_check.md / .json (and work files)")
    parser.add_argument("--float64", action="store_true",
                        help="one-step check in float64: devices must then agree to rounding of float64, which "
                             "tells a wrong kernel from float32 rounding")
    parser.add_argument("--devices", nargs="+", default=["cuda", "cpu"],
                        help="devices to train on; the first is the reference the others are compared with")
    parser.add_argument("--quick", action="store_true",
                        help="PATTERN only for benchmarking-gnns, no dropout runs, 2 epochs")
    parser.add_argument("--epochs", type=int, default=None, help="epochs per run (default 3, quick 2)")
    parser.add_argument("--threads", type=int, default=min(os.cpu_count() or 1, 8),
                        help="torch CPU threads (default: the cores, at most 8: these models are small)")
    parser.add_argument("--only", nargs="+", help="only these model labels (e.g. GCN GIN)")
    parser.add_argument("--keep", action="store_true", help="keep the generated data and run folders")
    args = parser.parse_args(argv)
    epochs = args.epochs or (2 if args.quick else 3)

    import torch

    if args.float64:
        ONE_STEP_DTYPE[0] = torch.float64

    start = time.perf_counter()
    if any(d.startswith("cuda") for d in args.devices):
        if not torch.cuda.is_available():
            print("no CUDA device available: run with --devices cpu cpu to check the CPU path", file=sys.stderr)
            return 2
        torch.ones(1, device="cuda").sum().item()  # CUDA context start-up outside the first model's timing
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.out / "work"
    shutil.rmtree(work, ignore_errors=True)  # the entry points resume from what they find: start clean
    cases = build_cases(args.quick, epochs, args.only)
    datasets = make_datasets(work / "datasets", sorted({c.dataset for c in cases}))
    rows = check(cases, args.devices, datasets, work / "runs", args.threads)
    total = time.perf_counter() - start
    names = []
    for device in dict.fromkeys(args.devices):
        names.append(f"{device}: {torch.cuda.get_device_name(device)}" if device.startswith("cuda") else
                     f"{device}: {platform.processor() or platform.machine()}")
    header = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "torch": torch.__version__,
              "cuda": torch.version.cuda, "devices": " vs ".join(args.devices), "reference": args.devices[0]
              if args.devices.count(args.devices[0]) == 1 else f"{args.devices[0]}#1",
              "device_names": "; ".join(names), "threads": args.threads,
              "epochs": epochs, "quick": args.quick, "total_seconds": total,
              "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
              "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
              "tolerance": {"one_step_rtol": ONE_STEP_RTOL, "loss_rtol": LOSS_RTOL, "loss_atol": LOSS_ATOL,
                            "metric_rtol": METRIC_RTOL, "metric_atol": METRIC_ATOL}}
    (args.out / "gpu_check.json").write_text(json.dumps({"header": header, "rows": rows}, indent=1, default=str))
    table = markdown(rows, header)
    (args.out / "gpu_check.md").write_text(table)
    print("\n" + table)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if any(r["status"] == "FAIL" for r in rows) or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
