"""The fair-comparison protocol's final runs trained as one stack (gnnbench.training.stacked_holdout): the vmapped
HoldoutStack (a member equals the same run trained alone on the stack's shared random stream — the first run's batch
order and dropout masks —, members stop at different epochs and leave the stack, gradient clipping is per member);
the final-run job, which trains Errica's GIN as a wide MemberStack (tests/test_fair_comparison_stack.py tests its
members), keeps its outputs; a model that cannot be stacked gives exactly today's separate runs, and a stopped job
resumes to the same results."""

from __future__ import annotations

import dataclasses
import json
import logging
import math

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from gnnbench.config.keys import coerce_all, protocol_types
from gnnbench.models.registry import ERRICA2020, ModelData, build_model
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.protocols import fair_comparison as fc
from gnnbench.training import stacked_holdout
from gnnbench.training.checkpoint import restore_rng, rng_state
from gnnbench.training.functional_stack import NotStackable
from gnnbench.training.holdout import train_holdout

# Errica's GIN (fair_GIN's fixed parameters, one small grid point): dropout (also at eval), batch norm, step schedule
GIN = {"model": "GIN", "hidden_units": [16, 16], "train_eps": True, "aggregation": "sum", "dropout": 0.5,
       "dropout_layer0_at_eval": True, "batch_size": 16, "learning_rate": 0.01, "optimizer": "Adam",
       "scheduler": "step", "scheduler_step_size": 3, "scheduler_gamma": 0.5, "l2": 0.0, "gradient_clipping": 0.0,
       "epochs": 12, "patience": 2, "early_stopping": "accuracy", "time_limit_hours": 72.0}
# its mean/max aggregation is an autograd.Function without a vmap rule: trained run by run
SAGE = {"model": "GraphSAGE", "num_layers": 2, "dim_embedding": 8, "aggregation": "max", "batch_size": 16,
        "learning_rate": 0.01, "optimizer": "Adam", "scheduler": "none", "l2": 0.0, "gradient_clipping": 0.0,
        "epochs": 3, "patience": 500, "early_stopping": "accuracy", "time_limit_hours": 72.0}
SEEDS = [11, 22, 33]
# GIN's linear layers whose output goes straight into a train-mode batch norm (their bias has no true gradient)
BEFORE_BATCH_NORM = {"first_h.0.bias", "first_h.3.bias", "convs.0.mlp.linears.0.bias", "convs.0.mlp.linears.1.bias",
                     "convs.1.mlp.linears.0.bias", "convs.1.mlp.linears.1.bias"}
# vmapped products and batch-norm reductions sum in another order than a run alone. The gradient of a bias just
# before a train-mode batch norm is rounding noise (batch norm removes that bias), which Adam normalises into steps of
# about the learning rate: such biases (and the running means that follow them, read at evaluation) differ between
# any two orders of summation, in float64 too; every other weight agrees to float64 rounding. Those biases reach
# the losses at about 1e-5 relative, more or less with the thread count other tests left set.
BIAS_ATOL, ATOL, LOSS_REL = 1e-3, 1e-9, 1e-4


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    root = tmp_path_factory.mktemp("gf")
    generate_dataset("graph_families", "GF", {"num_graphs": 90, "features": "degree"}, 1, root / "ds")
    make_split_file(root / "ds", "stratified_kfold", {"folds": 3, "val_fraction": 0.1, "seed": 0}, root / "s.json")
    return root


def _setup(families, config, double: bool = False):
    """Data, fold-0 parts, coerced config and model builder; ``double``: weights and features in float64, where the
    stack's rounding (batched products and reductions sum in another order) stays far below what changes a
    prediction — in float32 that rounding, as a change of thread count does, can flip a validation prediction of a
    run on 6 hold-out graphs after a few epochs and so change its trajectory."""
    data = fc._load(families / "ds", families / "s.json")
    if double:
        wide = {k: v.double() if v.is_floating_point() else v for k, v in data.store.node.items()}
        data.store = dataclasses.replace(data.store, node=wide)
    parts = {p: torch.from_numpy(v) for p, v in data.splits.fold(0).items()}
    cfg = coerce_all(config, "config", protocol_types(fc.FairComparison, config))
    model_data = ModelData(data.meta, data.sizes, data.store, train_graphs=parts["train"])

    def build():
        model = build_model(cfg, model_data, default_variant=ERRICA2020)
        return model.double() if double else model

    return data, parts, cfg, build


def _alone(build, seeds, r, store, parts, cfg):
    """Run r trained alone by train_holdout on the stack's stream: run 0's RNG after run 0's initialisation."""
    torch.manual_seed(seeds[0])
    build()
    stream = rng_state(torch.default_generator)
    torch.manual_seed(seeds[r])
    model = build()
    restore_rng(stream, torch.default_generator)
    return model, train_holdout(model, store, parts, cfg, device=torch.device("cpu"))


def _same_run(stacked: dict, alone: dict) -> None:
    assert (stacked["best_epoch"], stacked["epochs"], stacked["stop_reason"], stacked["status"]) == (
        alone["best_epoch"], alone["epochs"], alone["stop_reason"], alone["status"])
    for row_s, row_a in zip(stacked["history"], alone["history"], strict=True):
        for key in ("train_accuracy", "val_accuracy", "test_accuracy"):
            assert row_s[key] == row_a[key], (row_s["epoch"], key)
        for key in ("train_loss", "val_loss", "test_loss", "lr"):
            assert row_s[key] == pytest.approx(row_a[key], rel=LOSS_REL), (row_s["epoch"], key)
    for key in ("train_accuracy", "val_accuracy", "test_accuracy"):
        assert stacked["scores"][key] == alone["scores"][key]


def _trained(families, config, **changes):
    data, parts, cfg, build = _setup(families, config, double=True)
    cfg.update(changes)
    stack = stacked_holdout.HoldoutStack(build, SEEDS, data.store, parts, cfg, device=torch.device("cpu"))
    final = {}
    real_stop = stack._stop

    def stop(done):  # each member's weights as it leaves the stack
        for i in done:
            final[stack.active[i]] = {n: p[i].detach().clone() for n, p in stack.params.items()}
        real_stop(done)

    stack._stop = stop
    return data, parts, cfg, build, stack.fit(), final


@pytest.mark.parametrize("changes", [{}, {"gradient_clipping": 0.05, "early_stopping": "loss", "optimizer": "SGD"}])
def test_each_member_is_its_run_trained_alone_on_the_shared_stream(families, changes):
    data, parts, cfg, build, results, final = _trained(families, GIN, **changes)
    assert len({r["epochs"] for r in results}) > 1  # members stopped at different epochs and left the stack
    assert {r["stop_reason"] for r in results} <= {"patience", "max_epochs"}
    for r in range(len(SEEDS)):
        model, alone = _alone(build, SEEDS, r, data.store, parts, cfg)
        _same_run(results[r], alone)
        own = dict(model.named_parameters())
        for name, weights in final[r].items():
            noise = name in BEFORE_BATCH_NORM
            torch.testing.assert_close(weights, own[name].detach(), atol=BIAS_ATOL if noise else ATOL, rtol=0)


def test_gradient_clipping_is_per_member(families):
    """A clipping threshold below every member's gradient norm scales each member by its own norm: with one
    global norm over the stack the runs would differ from their runs alone (checked above) and from each other's
    unclipped updates; here the first step of member 1 equals clip_grad_norm_ on its own gradient."""
    data, parts, cfg, build = _setup(families, {**GIN, "dropout": 0.0, "gradient_clipping": 0.01, "epochs": 1})
    stack = stacked_holdout.HoldoutStack(build, SEEDS, data.store, parts, cfg, device=torch.device("cpu"))
    grads = {n: torch.randn_like(p) * (1 + torch.arange(3).view(-1, *[1] * (p.dim() - 1))) for n, p in
             stack.params.items()}
    for name, p in stack.params.items():
        p.grad = grads[name].clone()
    stack._clip()
    for r in range(3):
        own = [grads[n][r].clone().requires_grad_() for n in grads]
        for t in own:
            t.grad = t.detach().clone()
        torch.nn.utils.clip_grad_norm_(own, 0.01)
        for t, name in zip(own, grads, strict=True):
            torch.testing.assert_close(stack.params[name].grad[r], t.grad)


def _selection(tmp_path, config):
    tmp_path.mkdir(parents=True, exist_ok=True)
    selection = tmp_path / "selection.json"
    body = {"format": 1, "dataset": "GF", "model": config["model"], "fold": 0, "candidates": [],
            "chosen": {"config_id": "x", "config": config, "val_accuracy": 50.0}}
    selection.write_text(json.dumps({**body, "checksum": fc.sha256_json(body)}))
    return selection


def _run_final(families, tmp_path, config, holdout="selection", **kwargs):
    out, hist = tmp_path / "final.parquet", tmp_path / "final_history.parquet"
    kwargs.setdefault("stack", True)
    fc.run_final(dataset_dir=families / "ds", splits_path=families / "s.json", fold=0,
                 selection_path=_selection(tmp_path, config), runs=3, holdout=holdout, seed=0, out=out,
                 history_out=hist, device="cpu", records_out=tmp_path / "records.parquet", **kwargs)
    return pq.read_table(out).to_pylist(), pq.read_table(hist).to_pylist()


def test_final_job_trains_the_stack_and_keeps_its_outputs(families, tmp_path):
    stacked = _run_final(families, tmp_path / "a", GIN)
    separate = _run_final(families, tmp_path / "b", GIN, stack=False)
    for table in (0, 1):  # final.parquet and the history: the same columns in the same order
        assert list(stacked[table][0]) == list(separate[table][0])
    assert (pq.read_schema(tmp_path / "a" / "records.parquet")
            .equals(pq.read_schema(tmp_path / "b" / "records.parquet")))
    assert [r["seed"] for r in stacked[0]] == [r["seed"] for r in separate[0]]
    # the job's rows are the members of a wide stack (seeds and parts of the job's final runs), trained directly here
    data, parts, cfg, build = _setup(families, GIN)
    seeds = [r["seed"] for r in stacked[0]]
    members = stacked_holdout.MemberStack([build] * 3, seeds, [cfg] * 3, data.store, parts,
                                          device=torch.device("cpu")).fit()
    for row, member in zip(stacked[0], members, strict=True):
        assert {k: row[k] for k in ("best_epoch", "epochs", "stop_reason", "status")} == {
            k: member[k] for k in ("best_epoch", "epochs", "stop_reason", "status")}
        scores = [k for k in member["scores"] if k.endswith(("_loss", "_accuracy"))]
        assert len(scores) == 6 and {k: row[k] for k in scores} == {k: member["scores"][k] for k in scores}
    history = [{k: v for k, v in h.items() if k not in ("run", "seconds")} for h in stacked[1]]
    assert history == [{k: v for k, v in h.items() if k != "seconds"} for m in members for h in m["history"]]
    # the default (stack off): run by run, today's results
    out, hist = tmp_path / "c" / "final.parquet", tmp_path / "c" / "final_history.parquet"
    fc.run_final(dataset_dir=families / "ds", splits_path=families / "s.json", fold=0,
                 selection_path=_selection(tmp_path / "c", GIN), runs=3, holdout="selection", seed=0, out=out,
                 history_out=hist, device="cpu")
    assert _rows((pq.read_table(out).to_pylist(), pq.read_table(hist).to_pylist())) == _rows(separate)
    # a second call reads the members' stored results: nothing trains
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "a" / "runs").glob("*.json")}
    assert len(before) == 3
    assert _rows(_run_final(families, tmp_path / "a", GIN)) == _rows(stacked)
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "a" / "runs").glob("*.json")} == before


def test_fresh_holdouts_and_unstackable_models_train_as_today(families, tmp_path, caplog):
    """Final runs with their own hold-outs share no training set, and GraphSAGE cannot be vmapped: both train run by
    run, the results identical to the separate runs', with one log line saying why."""
    with caplog.at_level(logging.INFO, logger="gnnbench.protocols.fair_comparison"):
        fresh = _run_final(families, tmp_path / "a", GIN, holdout="fresh")
        sage = _run_final(families, tmp_path / "c", SAGE)
    assert _rows(fresh) == _rows(_run_final(families, tmp_path / "b", GIN, holdout="fresh", stack=False))
    assert _rows(sage) == _rows(_run_final(families, tmp_path / "d", SAGE, stack=False))
    text = caplog.text
    assert "GIN: final runs trained one after another, not stacked (they hold out different graphs" in text
    assert ("GraphSAGE: final runs trained one after another, not stacked (it uses a torch.autograd.Function "
            "without a vmap rule)") in text


def _rows(result):
    rows, hist = result
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows], [
        {k: v for k, v in h.items() if k != "seconds"} for h in hist]


def test_graphsage_is_not_stackable(families):
    data, parts, cfg, build = _setup(families, SAGE)
    with pytest.raises(NotStackable, match="autograd.Function without a vmap rule"):
        stacked_holdout.HoldoutStack(build, SEEDS, data.store, parts, cfg, device=torch.device("cpu"))


def test_a_stopped_stack_resumes_to_the_same_results(families, tmp_path, monkeypatch):
    from gnnbench.training import engine
    from gnnbench.training.preemption import Preempted

    config = {**GIN, "patience": 1}  # members stop at different epochs (the wide stack's masks differ from vmap's)
    whole = _rows(_run_final(families, tmp_path / "a", config))
    saves = {"n": 0}
    real = engine._checkpoint.save_checkpoint

    def save_then_stop(path, state):  # killed right after the stack's third checkpoint
        real(path, state)
        saves["n"] += 1
        if saves["n"] == 3:
            raise Preempted(15, "stopped")

    monkeypatch.setattr(fc, "CHECKPOINT_SECONDS", 0)
    monkeypatch.setattr(engine._checkpoint, "save_checkpoint", save_then_stop)
    with pytest.raises(Preempted):
        _run_final(families, tmp_path / "b", config)
    checkpoints = list((tmp_path / "b" / "runs").glob("*.checkpoint.pt"))
    assert len(checkpoints) == 1 and engine.checkpoint_epochs(checkpoints[0]) == 3
    monkeypatch.setattr(engine._checkpoint, "save_checkpoint", real)
    real_step, steps = stacked_holdout.MemberStack._step, []

    def counted(self, *args):
        steps.append(self.epoch)
        return real_step(self, *args)

    monkeypatch.setattr(stacked_holdout.MemberStack, "_step", counted)
    resumed = _rows(_run_final(families, tmp_path / "b", config))
    assert resumed == whole
    assert steps == list(range(3, max(r["epochs"] for r in resumed[0])))  # from epoch 3 on, not from scratch
    assert not list((tmp_path / "b" / "runs").glob("*.checkpoint.pt"))
    assert all(math.isfinite(r["test_accuracy"]) for r in resumed[0])
    assert np.unique([r["epochs"] for r in resumed[0]]).size > 1
