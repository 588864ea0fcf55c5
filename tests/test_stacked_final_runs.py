"""The fair-comparison protocol's final runs trained as one wide stack (gnnbench.training.best_epoch_stack.HoldoutStack,
run_final with ``stack``): a member equals the same run trained alone on the stack's shared batch order (the first
run's stream; float64, no dropout), members stop at different epochs and leave the stack, gradient clipping is per
member; the final-run job keeps its outputs; a model that does not widen (GraphSAGE) and fresh hold-outs give exactly
today's separate runs, and a stopped job resumes to the same results. The helpers are those of
tests/test_fair_comparison_stack.py, which tests members with different configurations."""

from __future__ import annotations

import json
import logging
import math

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from test_fair_comparison_stack import MEMBERS, _alone, _builder, _data, _one_thread, _same, _stack  # noqa: F401

from gnnbench.io import sha256_json
from gnnbench.models.build import count_parameters
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.protocols.fair_comparison import train as fc_train
from gnnbench.training import best_epoch_stack as stacked_holdout
from gnnbench.training.wide import NotWidenable

# Errica's GIN (fair_GIN's fixed parameters, one small grid point): dropout (also at eval), batch norm, step schedule
GIN = {"model": "GIN", "hidden_units": [16, 16], "train_eps": True, "aggregation": "sum", "dropout": 0.5,
       "dropout_layer0_at_eval": True, "batch_size": 16, "learning_rate": 0.01, "optimizer": "Adam",
       "scheduler": "step", "scheduler_step_size": 3, "scheduler_gamma": 0.5, "l2": 0.0, "gradient_clipping": 0.0,
       "epochs": 12, "patience": 2, "early_stopping": "accuracy", "time_limit_hours": 72.0}
# its own weight layout: does not widen, trained run by run
SAGE = {"model": "GraphSAGE", "num_layers": 2, "dim_embedding": 8, "aggregation": "max", "batch_size": 16,
        "learning_rate": 0.01, "optimizer": "Adam", "scheduler": "none", "l2": 0.0, "gradient_clipping": 0.0,
        "epochs": 3, "patience": 500, "early_stopping": "accuracy", "time_limit_hours": 72.0}
SEEDS = [11, 22, 33]


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    root = tmp_path_factory.mktemp("gf")
    generate_dataset("graph_families", "GF", {"num_graphs": 90, "features": "degree"}, 1, root / "ds")
    make_split_file(root / "ds", "stratified_kfold", {"folds": 3, "val_fraction": 0.1, "seed": 0}, root / "s.json")
    return root


# one configuration (weight decay > 0: tests/test_fair_comparison_stack.py says why), three seeds: the final runs
@pytest.mark.parametrize("changes", [{}, {"gradient_clipping": 0.05, "early_stopping": "loss", "optimizer": "SGD",
                                          "learning_rate": 0.05}])
def test_each_final_run_is_its_run_trained_alone_on_the_shared_batch_order(families, changes):
    """Float64, dropout 0: member r of the final-run stack (seed r, the chosen configuration) equals run r trained
    alone by train_holdout on the stack's batch order (run 0's stream after its initialisation), weights included;
    members stop at different epochs and leave the stack."""
    data, parts, cfgs, model_data, results, final = _stack(families, [{**MEMBERS[2], **changes}] * 3, SEEDS)
    assert len({r["epochs"] for r in results}) > 1  # members stopped at different epochs and left the stack
    assert {r["stop_reason"] for r in results} <= {"patience", "max_epochs"}
    for r in range(len(SEEDS)):
        model, alone = _alone(data, parts, cfgs[r], model_data, SEEDS[r], SEEDS[0])
        _same(results[r], alone)
        own = model.state_dict()
        for name, value in final[r].items():
            torch.testing.assert_close(value, own[name].reshape(value.shape), rtol=1e-9, atol=1e-10)
        assert results[r]["num_params"] == count_parameters(model)


def test_gradient_clipping_is_per_member(families, monkeypatch):
    """A clipping threshold below every member's gradient norm scales each member by its own norm: in a training
    step of the final-run stack each member's clipped gradient equals clip_grad_norm_ on its own gradient alone."""
    data, parts = _data(families)
    cfg, build = _builder(data, parts, {**GIN, "dropout": 0.0, "gradient_clipping": 0.01, "epochs": 1})
    stack = stacked_holdout.HoldoutStack([build] * 3, SEEDS, [cfg] * 3, data.store, parts, device=torch.device("cpu"))
    real_clip, seen = stacked_holdout.wide.clip_members, []

    def clip(model, max_norm):  # the step's gradients before and after its clipping
        params = [p for p in model.parameters() if p.grad is not None]
        before = [p.grad.detach().clone() for p in params]
        out = real_clip(model, max_norm)
        seen.append([(g, p.grad.detach().clone()) for g, p in zip(before, params, strict=True)])
        return out

    monkeypatch.setattr(stacked_holdout.wide, "clip_members", clip)
    monkeypatch.setattr(stack.optimizer, "step", lambda: None)
    stack._scores([next(iter(stack.loaders["train"]))], train=True)
    (pairs,) = seen
    for r in range(3):
        own = [before[r].clone().requires_grad_() for before, _ in pairs]
        for t, (before, _) in zip(own, pairs, strict=True):
            t.grad = before[r].clone()
        assert torch.nn.utils.clip_grad_norm_(own, 0.01) > 0.01  # the member's norm is above the threshold
        for t, (_, after) in zip(own, pairs, strict=True):
            torch.testing.assert_close(after[r], t.grad)


def _selection(tmp_path, config):
    tmp_path.mkdir(parents=True, exist_ok=True)
    selection = tmp_path / "selection.json"
    body = {"format": 1, "dataset": "GF", "model": config["model"], "fold": 0, "candidates": [],
            "chosen": {"config_id": "x", "config": config, "val_accuracy": 50.0}}
    selection.write_text(json.dumps({**body, "checksum": sha256_json(body)}))
    return selection


def _run_final(families, tmp_path, config, holdout="selection", **kwargs):
    out, hist = tmp_path / "final.parquet", tmp_path / "final_history.parquet"
    kwargs.setdefault("stack", True)
    fc_train.run_final(dataset_dir=families / "ds", splits_path=families / "s.json", fold=0,
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
    data, parts = _data(families)
    cfg, build = _builder(data, parts, GIN)
    seeds = [r["seed"] for r in stacked[0]]
    members = stacked_holdout.fit_stack(stacked_holdout.HoldoutStack([build] * 3, seeds, [cfg] * 3, data.store,
                                                                     parts, device=torch.device("cpu")))
    for row, member in zip(stacked[0], members, strict=True):
        assert {k: row[k] for k in ("best_epoch", "epochs", "stop_reason", "status")} == {
            k: member[k] for k in ("best_epoch", "epochs", "stop_reason", "status")}
        scores = [k for k in member["scores"] if k.endswith(("_loss", "_accuracy"))]
        assert len(scores) == 6 and {k: row[k] for k in scores} == {k: member["scores"][k] for k in scores}
    history = [{k: v for k, v in h.items() if k not in ("run", "seconds")} for h in stacked[1]]
    assert history == [{k: v for k, v in h.items() if k != "seconds"} for m in members for h in m["history"]]
    # the default (stack off): run by run, today's results
    out, hist = tmp_path / "c" / "final.parquet", tmp_path / "c" / "final_history.parquet"
    fc_train.run_final(dataset_dir=families / "ds", splits_path=families / "s.json", fold=0,
                 selection_path=_selection(tmp_path / "c", GIN), runs=3, holdout="selection", seed=0, out=out,
                 history_out=hist, device="cpu")
    assert _rows((pq.read_table(out).to_pylist(), pq.read_table(hist).to_pylist())) == _rows(separate)
    # a finished job run again (Snakemake's --forcerun) trains afresh, to the same rows
    assert _rows(_run_final(families, tmp_path / "a", GIN)) == _rows(stacked)


def test_fresh_holdouts_and_unstackable_models_train_as_today(families, tmp_path, caplog):
    """Final runs with their own hold-outs share no training set, and GraphSAGE does not widen: both train run by
    run, the results identical to the separate runs', with one log line saying why."""
    with caplog.at_level(logging.INFO, logger="gnnbench.protocols.fair_comparison"):
        fresh = _run_final(families, tmp_path / "a", GIN, holdout="fresh")
        sage = _run_final(families, tmp_path / "c", SAGE)
    assert _rows(fresh) == _rows(_run_final(families, tmp_path / "b", GIN, holdout="fresh", stack=False))
    assert _rows(sage) == _rows(_run_final(families, tmp_path / "d", SAGE, stack=False))
    text = caplog.text
    assert "GIN: final runs trained one after another, not stacked (they hold out different graphs" in text
    assert "GraphSAGE: final runs not trained as one wide stack (layers.0: ClosedSAGEConv holds a parameter" in text


def _rows(result):
    rows, hist = result
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows], [
        {k: v for k, v in h.items() if k != "seconds"} for h in hist]


def test_graphsage_does_not_widen(families):
    data, parts = _data(families)
    cfg, build = _builder(data, parts, SAGE)
    with pytest.raises(NotWidenable, match="ClosedSAGEConv holds a parameter 'weight'"):
        stacked_holdout.HoldoutStack([build] * 3, SEEDS, [cfg] * 3, data.store, parts, device=torch.device("cpu"))


def test_a_stopped_stack_resumes_to_the_same_results(families, tmp_path, monkeypatch):
    from gnnbench.training import engine
    from gnnbench.training.preemption import Preempted

    config = {**GIN, "patience": 1}  # members stop at different epochs
    whole = _rows(_run_final(families, tmp_path / "a", config))
    saves = {"n": 0}
    real = engine._checkpoint.save_checkpoint

    def save_then_stop(path, state):  # killed right after the stack's third epoch is saved
        real(path, state)
        saves["n"] += 1
        if saves["n"] == 4:  # the job's empty state, then the stack after each epoch
            raise Preempted(15, "stopped")

    monkeypatch.setattr("gnnbench.protocols.fair_comparison.train.CHECKPOINT_SECONDS", 0)
    monkeypatch.setattr(engine._checkpoint, "save_checkpoint", save_then_stop)
    with pytest.raises(Preempted):
        _run_final(families, tmp_path / "b", config)
    from gnnbench.training.checkpoint import read_checkpoint

    checkpoint = tmp_path / "b" / "final.checkpoint.pt"
    assert read_checkpoint(checkpoint)["current"]["fit"]["run"]["states"][0]["epoch"] == 3
    monkeypatch.setattr(engine._checkpoint, "save_checkpoint", real)
    real_epoch, steps = stacked_holdout.HoldoutStack.epoch, []

    def counted(self, run, members):
        steps.append(run.states[members[0]].epoch)
        return real_epoch(self, run, members)

    monkeypatch.setattr(stacked_holdout.HoldoutStack, "epoch", counted)
    resumed = _rows(_run_final(families, tmp_path / "b", config))
    assert resumed == whole
    assert steps == list(range(3, max(r["epochs"] for r in resumed[0])))  # from epoch 3 on, not from scratch
    assert read_checkpoint(checkpoint)["finished"]  # the job is done: kept, never resumed
    assert all(math.isfinite(r["test_accuracy"]) for r in resumed[0])
    assert np.unique([r["epochs"] for r in resumed[0]]).size > 1
