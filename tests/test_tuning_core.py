"""The protocol-free core of equal tuning (gnnbench/tuning): spaces, the seeded sampler and its replay, the pruning
rule inside the engine, selection, and trials in the run record."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gnnbench import papers
from gnnbench.config.presets import all_presets, preset_protocol, run_config
from gnnbench.errors import ConfigError, DataError, GnnbenchError
from gnnbench.records import history_frame, read_runs, write_records
from gnnbench.training.engine import MaxEpochs, PerMember, Run, Step, fit
from gnnbench.tuning.pruning import Pruner
from gnnbench.tuning.record import read_trials, trial_rows
from gnnbench.tuning.sampler import Trial, ask
from gnnbench.tuning.select import curve, select
from gnnbench.tuning.space import (
    Dist,
    allowed_keys,
    apply,
    check_space,
    default_space,
    parse_space,
    per_member,
    shape_key,
    space_spec,
    stacks,
)

SUITE_SPACE = {"learning_rate": {"log_uniform": [1.0e-4, 1.0e-1]}, "dropout": {"uniform": [0.0, 0.8]},
               "hidden_dim": {"int": [16, 256], "log": True}, "aggregation": {"categorical": ["sum", "mean"]}}


# ---------------------------------------------------------------------------------------------------- spaces


def test_parse_space_reads_the_suite_syntax():
    space = parse_space({**SUITE_SPACE, "hidden_units": {"categorical": [[64, 64], [32]]},
                         "p": {"uniform": [0.0, 0.5], "step": 0.1}, "L": {"int": [2, 8], "step": 2}}, "tuning.space")
    assert space == {"learning_rate": Dist("log_uniform", 1e-4, 1e-1), "dropout": Dist("uniform", 0.0, 0.8),
                     "hidden_dim": Dist("int", 16, 256, log=True), "aggregation": Dist("categorical",
                                                                                       choices=("sum", "mean")),
                     "hidden_units": Dist("categorical", choices=([64, 64], [32])),
                     "p": Dist("uniform", 0.0, 0.5, step=0.1), "L": Dist("int", 2, 8, step=2)}
    assert parse_space(space_spec(space), "again") == space  # to_spec reads back
    lr, width, agg = (space[k].to_optuna() for k in ("learning_rate", "hidden_dim", "hidden_units"))
    assert (lr.low, lr.high, lr.log) == (1e-4, 1e-1, True)
    assert (width.low, width.high, width.log, width.step) == (16, 256, True, 1)
    assert agg.choices == ("[64, 64]", "[32]")  # lists travel through Optuna as JSON text
    assert space["hidden_units"].decode("[32]") == [32]


@pytest.mark.parametrize("spec, parts", [
    ({"lr": {"log_uniform": [0.1, 0.01]}}, ["s.lr.log_uniform: low 0.1 must be below high 0.01", "low < high"]),
    ({"lr": {"uniform": [0.5, 0.5]}}, ["s.lr.uniform: low 0.5 must be below high 0.5"]),
    ({"lr": {"log_uniform": [0.0, 0.1]}}, ["s.lr.log_uniform: a log range needs low > 0, got 0.0",
                                           "positive low such as 1.0e-6"]),
    ({"h": {"int": [0, 64], "log": True}}, ["s.h.int: a log range needs low > 0, got 0"]),
    ({"lr": {"normal": [0, 1]}}, ["s.lr: unknown distribution 'normal'",
                                  "use one of log_uniform, uniform, int, categorical"]),
    ({"lr": {"uniform": [0, 1], "int": [0, 1]}}, ["s.lr: expected exactly one of", "got uniform, int"]),
    ({"a": {"categorical": []}}, ["s.a.categorical: expected a non-empty list of choices"]),
    ({"a": {"categorical": ["sum", "mean", "sum"]}}, ["s.a.categorical: choice 'sum' is listed twice"]),
    ({"h": {"int": [16.5, 64]}}, ["s.h.int: expected integer bounds", "use uniform"]),
    ({"lr": {"uniform": [0, "1"]}}, ["s.lr.uniform: expected [low, high], two numbers"]),
    ({"lr": {"uniform": [0, 1], "log": True}}, ["s.lr.log: only int takes log", "use log_uniform"]),
    ({"lr": {"log_uniform": [1e-4, 1], "step": 0.1}}, ["s.lr.step: a log range takes no step"]),
    ({"h": {"int": [16, 64], "step": 0}}, ["s.h.step: expected a positive integer, got 0"]),
    ({"h": {"int": [16, 64], "step": 5}}, ["s.h.step: the range [16, 64] is not a whole number of steps 5",
                                          "make high - low a multiple of step"]),
    ({"p": {"uniform": [0.0, 0.5], "step": 0.2}}, ["s.p.step: the range [0.0, 0.5] is not a whole number"]),
    ({"lr": 0.01}, ["s.lr: expected one distribution as a mapping", "got 0.01"]),
    ({}, ["s: expected a mapping of config keys to distributions"]),
])
def test_parse_space_refuses_each_mistake_in_one_line(spec, parts):
    with pytest.raises(ConfigError) as err:
        parse_space(spec, "s")
    message = str(err.value)
    assert "\n" not in message
    for part in parts:
        assert part in message


def _check_default(config: dict, protocol: str, space: dict) -> None:
    """The invariants of every default space: only allowed keys, the published value a point of the space, and a
    trial config is the published config with the searched keys replaced."""
    allowed = allowed_keys(config, protocol)
    check_space(space, config, protocol, "tuning.space")
    for key, dist in space.items():
        assert key in allowed
        if key in config and not (dist.kind == "log_uniform" and config[key] == 0):
            assert dist.contains(config[key]), (key, config[key], dist)
    params = {k: d.low if d.kind != "categorical" else d.choices[-1] for k, d in space.items()}
    trial = apply(config, params)
    assert set(trial) == set(config) | set(params) and trial is not config
    assert {k: v for k, v in trial.items() if k not in params} == {k: v for k, v in config.items() if k not in params}


def test_default_space_of_the_benchmark_zoo():
    config = run_config("molecules_graph_regression_GCN_ZINC_500k", protocol="benchmarking-gnns")
    space = default_space(config, "benchmarking-gnns")
    assert space == {"init_lr": Dist("log_uniform", 1e-4, 1e-1), "weight_decay": Dist("log_uniform", 1e-6, 1e-2),
                     "L": Dist("int", 1, 16), "hidden_dim": Dist("int", 16, 256, log=True),
                     "residual": Dist("categorical", choices=(True, False)),
                     "batch_norm": Dist("categorical", choices=(True, False)),
                     "in_feat_dropout": Dist("uniform", 0.0, 0.8), "dropout": Dist("uniform", 0.0, 0.8)}
    assert config["L"] == 16  # the range widened to the published depth
    _check_default(config, "benchmarking-gnns", space)
    gat = run_config("molecules_graph_regression_GAT_ZINC_100k", protocol="benchmarking-gnns")
    assert gat["n_heads"] == 8 and gat["hidden_dim"] == 18
    assert default_space(gat, "benchmarking-gnns")["hidden_dim"] == Dist("int", 2, 32, log=True)  # per head
    assert default_space(config, "benchmarking-gnns", exclude=["hidden_dim"]).keys() == space.keys() - {"hidden_dim"}


def test_default_space_of_the_pitfalls_and_fair_comparison_zoos():
    gcn = run_config("pitfalls_GCN", protocol="pitfalls")
    space = default_space(gcn, "pitfalls")
    assert space == {"learning_rate": Dist("log_uniform", 1e-4, 1e-1), "weight_decay": Dist("log_uniform", 1e-6, 1e-2),
                     "hidden_size": Dist("int", 16, 256, log=True), "dropout_prob": Dist("uniform", 0.0, 0.8)}
    _check_default(gcn, "pitfalls", space)
    gs = run_config("pitfalls_GS-mean", protocol="pitfalls")  # weight decay 0.1: the range widens to hold it
    assert default_space(gs, "pitfalls")["weight_decay"] == Dist("log_uniform", 1e-6, 0.1)
    gat = run_config("pitfalls_GAT", protocol="pitfalls")
    assert default_space(gat, "pitfalls")["hidden_size"] == Dist("int", 2, 32, log=True)  # 8 heads of 8
    assert "num_heads" not in default_space(gat, "pitfalls")
    # label propagation has no weights: no key to tune by default, not even the protocol's learning rate
    assert default_space(run_config("pitfalls_LabelProp", protocol="pitfalls"), "pitfalls") == {}
    # a grid point of Errica's GraphSAGE: its grid keys are keys of the config
    sage = {**run_config("fair_GraphSAGE", protocol="fair-comparison"), "learning_rate": 0.01, "num_layers": 3,
            "dim_embedding": 32, "aggregation": "max", "early_stopping": "loss"}
    space = default_space(sage, "fair-comparison")
    assert space == {"learning_rate": Dist("log_uniform", 1e-4, 1e-1), "l2": Dist("log_uniform", 1e-6, 1e-2),
                     "num_layers": Dist("int", 1, 10), "dim_embedding": Dist("int", 16, 256, log=True)}
    _check_default(sage, "fair-comparison", space)
    gin = {**run_config("fair_GIN", protocol="fair-comparison"), "hidden_units": [64, 64], "dropout": 0.5}
    assert "hidden_units" not in default_space(gin, "fair-comparison")  # a list of widths is left out


def test_every_published_config_is_a_point_of_its_default_space():
    checked = 0
    for name, entry in all_presets().items():
        protocol = preset_protocol(entry)
        config = run_config(name, protocol=protocol)
        space = default_space(config, protocol)
        if config["model"] == "LabelProp":  # no weights, nothing to search (test above)
            assert space == {}, name
            continue
        assert {"init_lr", "learning_rate", "lr"} & set(space), name  # every protocol's learning rate is searched
        _check_default(config, protocol, space)
        checked += 1
    assert checked > 200


def test_default_space_of_the_heterophily_zoo(monkeypatch):
    # the platonov2023 keys (the released train.py's argument names) under protocol heterophily
    monkeypatch.setitem(papers.PROTOCOLS, "platonov2023", "heterophily")
    monkeypatch.setitem(papers.TRAINING_KEYS, "platonov2023", {
        "lr": float, "weight_decay": float, "num_steps": int, "num_warmup_steps": int, "warmup_proportion": float})
    config = {"num_layers": 5, "hidden_dim": 512, "hidden_dim_multiplier": 1.0, "num_heads": 8,
              "normalization": "LayerNorm", "dropout": 0.2, "input_features": ["original"], "lr": 3e-5,
              "weight_decay": 0.0, "num_steps": 1000, "num_warmup_steps": 0, "warmup_proportion": 0.0}
    space = default_space(config, "heterophily")
    assert space == {"lr": Dist("log_uniform", 3e-5, 1e-1), "weight_decay": Dist("log_uniform", 1e-6, 1e-2),
                     "num_layers": Dist("int", 1, 10), "hidden_dim": Dist("int", 16, 512, step=8),
                     "normalization": Dist("categorical", choices=("None", "LayerNorm", "BatchNorm")),
                     "dropout": Dist("uniform", 0.0, 0.8)}
    _check_default(config, "heterophily", space)


def test_default_space_of_a_pyg_model():
    gcn = {"model": "torch_geometric.nn.models.GCN", "hidden_channels": 64, "num_layers": 2}
    space = default_space(gcn, "pitfalls")
    # dropout is an argument of the constructor (default 0.0): a key the config may hold
    assert space == {"learning_rate": Dist("log_uniform", 1e-4, 1e-1), "weight_decay": Dist("log_uniform", 1e-6, 1e-2),
                     "dropout": Dist("uniform", 0.0, 0.8), "hidden_channels": Dist("int", 16, 256, log=True),
                     "num_layers": Dist("int", 1, 10)}
    _check_default(gcn, "pitfalls", space)
    gat = {"model": "torch_geometric.nn.models.GAT", "hidden_channels": 64, "num_layers": 2, "heads": 4}
    assert default_space(gat, "pitfalls")["hidden_channels"] == Dist("int", 16, 256, step=4)  # heads split it
    with pytest.raises(ConfigError, match=r"^tuning.space.hidden_dim: model torch_geometric.nn.models.GCN has no "
                                          r"key 'hidden_dim' under protocol pitfalls"):
        check_space({"hidden_dim": Dist("int", 16, 64)}, gcn, "pitfalls", "tuning.space")


def test_shape_keys_group_trials_that_share_parameter_shapes():
    space = parse_space(SUITE_SPACE, "s")
    assert [k for k in space if per_member(k)] == ["learning_rate", "dropout"]
    a = {"learning_rate": 0.01, "dropout": 0.1, "hidden_dim": 64, "aggregation": "sum"}
    b = {**a, "learning_rate": 0.001, "dropout": 0.5}
    assert shape_key(a, space) == shape_key(b, space) == shape_key({**a, "model": "GIN", "epochs": 3}, space)
    assert shape_key({**a, "hidden_dim": 32}, space) != shape_key(a, space)
    assert shape_key({**a, "aggregation": "mean"}, space) != shape_key(a, space)
    assert stacks([a, {**a, "hidden_dim": 32}, b, {**b, "aggregation": "mean"}, {**a, "hidden_dim": 32}],
                  space) == [[0, 2], [1, 4], [3]]


# ---------------------------------------------------------------------------------------------------- sampler


def _history(space, n: int, seed: int = 0) -> list[Trial]:
    params = ask(space, [], n, seed=seed, sampler="random")
    return [Trial(i, p, value=float(p["learning_rate"]), state="complete") for i, p in enumerate(params)]


def test_ask_is_deterministic_and_replays_every_state():
    space = parse_space(SUITE_SPACE, "s")
    history = _history(space, 12)
    history[3] = Trial(3, history[3].params, None, "pruned", {0: 0.2, 1: 0.3}, pruned_epoch=1)
    history[5] = Trial(5, history[5].params, None, "failed")
    first = ask(space, history, 4, seed=7)
    assert first == ask(space, history, 4, seed=7)
    assert first == ask(space, list(reversed(history)), 4, seed=7)  # replayed in trial-number order
    assert first != ask(space, history, 4, seed=8)
    assert first != ask(space, history[:-1], 4, seed=7)  # the round's seed depends on the trials before it
    assert len({json.dumps(p, sort_keys=True) for p in first}) == 4  # constant liar: a round's proposals differ
    for params in first:
        assert set(params) == set(space) and all(space[k].contains(v) for k, v in params.items())
        assert isinstance(params["hidden_dim"], int) and isinstance(params["learning_rate"], float)
    assert ask(space, history, 3, seed=7, sampler="random") == ask(space, history, 3, seed=7, sampler="random")
    with pytest.raises(ConfigError, match="does not fit the search space"):
        ask(space, [Trial(0, {**history[0].params, "hidden_dim": 1024}, 0.5)], 1, seed=0)
    with pytest.raises(ConfigError, match="sampler: unknown sampler 'grid'; choose one of tpe, random"):
        ask(space, history, 1, seed=0, sampler="grid")


def test_ask_gives_the_same_params_in_another_process(tmp_path):
    space = parse_space(SUITE_SPACE, "s")
    history = _history(space, 11)
    here = ask(space, history, 3, seed=3)
    script = ("import json, sys\nfrom gnnbench.tuning.sampler import Trial, ask\nfrom gnnbench.tuning.space import "
              "parse_space\nspec, hist = json.load(open(sys.argv[1]))\nprint(json.dumps(ask(parse_space(spec, 's'), "
              "[Trial(**t) for t in hist], 3, seed=3)))\n")
    data = tmp_path / "in.json"
    data.write_text(json.dumps([SUITE_SPACE, [vars(t) for t in history]]))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run([sys.executable, "-c", script, str(data)], capture_output=True, text=True, env=env,
                         check=True)
    assert json.loads(out.stdout) == here  # floats through JSON: bit for bit


def test_tpe_uses_the_history():
    # a 1-D quadratic with its optimum at 0.3, searched in rounds of 3 for 30 trials (10 random ones first): the
    # trials TPE proposes from the history lie near the optimum, a random search's anywhere (six searches pooled)
    space = {"x": Dist("uniform", 0.0, 1.0)}

    def search(sampler: str, seed: int) -> np.ndarray:
        history: list[Trial] = []
        while len(history) < 30:
            for params in ask(space, history, 3, seed=seed, sampler=sampler, startup=10):
                history.append(Trial(len(history), params, -(params["x"] - 0.3) ** 2))
        return np.abs(np.array([t.params["x"] for t in history[10:]]) - 0.3)

    tpe = np.concatenate([search("tpe", seed) for seed in range(6)])
    rnd = np.concatenate([search("random", seed) for seed in range(6)])
    assert np.median(tpe) < 0.6 * np.median(rnd)
    assert np.mean(tpe < 0.1) > 2 * np.mean(rnd < 0.1)


# ---------------------------------------------------------------------------------------------------- pruning


class CurveStep(Step):
    """Members whose validation score per epoch is a given curve; records who leaves when."""

    timed = False

    def __init__(self, curves):
        self.curves, self.left = curves, []

    def epoch(self, run, members):
        return [{"val_score": self.curves[m][run.states[m].epoch]} for m in members]

    def leave(self, members):
        self.left.append(list(members))


# history: trials 0, 1 trained 3 epochs, trial 2 was pruned after its first
HISTORY = [Trial(0, {}, 0.6, "complete", {0: 0.5, 1: 0.55, 2: 0.6}),
           Trial(1, {}, 0.7, "complete", {0: 0.4, 1: 0.5, 2: 0.7}),
           Trial(2, {}, None, "pruned", {0: 0.3}, pruned_epoch=0)]
CURVES = [[0.6, 0.6, 0.75, 0.8], [0.45, 0.5, 0.8, 0.9], [0.2, 0.9, 0.9, 0.9]]


def _fit(curves, pruner):
    step = CurveStep(curves)
    run = fit(Run(len(curves)), step, [pruner, PerMember([[MaxEpochs(4)] for _ in curves])])
    return run, step


def test_asha_prunes_at_the_rungs_as_computed_by_hand():
    # eta 3, rungs after 1, 3, 9 epochs. After 1: scores 0.5 0.4 0.3 (history) + 0.6 0.45 0.2 (members): n 6,
    # keep 6 // 3 = 2, the 2nd best is 0.5: members 1 and 2 stop. After 3: 0.6 0.7 (history) + 0.75 (member 0):
    # n 3, keep 1, the best is 0.75: member 0 goes on to its 4 epochs.
    run, step = _fit(CURVES, pruner := Pruner("asha", HISTORY, min_epochs=1, eta=3))
    assert step.left == [[1, 2], [0]]
    assert [s.stop_reason for s in run.states] == ["max_epochs", "pruned", "pruned"]
    assert [s.epoch for s in run.states] == [4, 1, 1]
    assert pruner.pruned_epoch == {1: 0, 2: 0}
    # minimising the negated scores prunes the same members
    _, step = _fit([[-v for v in c] for c in CURVES], Pruner("asha", [
        Trial(t.number, {}, None if t.value is None else -t.value, t.state, {e: -v for e, v in t.intermediate.items()})
        for t in HISTORY], min_epochs=1, eta=3, direction="minimize"))
    assert step.left == [[1, 2], [0]]
    # member 0 below the history's best after 3 epochs: pruned there (0-based epoch 2)
    run, step = _fit([[0.6, 0.6, 0.65, 0.8], *CURVES[1:]], pruner := Pruner("asha", HISTORY, min_epochs=1, eta=3))
    assert step.left == [[1, 2], [0]] and pruner.pruned_epoch == {0: 2, 1: 0, 2: 0}
    # without history and eta 2, rungs 1, 2, 4: after 1, keep 3 // 2 = 1 of 0.6 0.45 0.2; "none" stops nobody
    _, step = _fit(CURVES, Pruner("asha", [], min_epochs=1, eta=2))
    assert step.left == [[1, 2], [0]]
    _, step = _fit(CURVES, Pruner("none", HISTORY, min_epochs=1))
    assert step.left == [[0, 1, 2]]


def test_asha_prunes_nobody_at_a_rung_with_fewer_than_eta_scores():
    # eta 3, trials one after another reaching the rung after 1 epoch (no history): the first (0.6: n 1) and the
    # second (0.45 < 0.6, n 2) go on, the rung holding fewer than 3 scores; the third (0.5, n 3: keep 3 // 3 = 1,
    # the best is 0.6) is pruned; a fourth at 0.65 (n 4, keep 1, the best is now 0.65) goes on, a fifth at 0.62
    # (n 5, keep 1) is pruned, a sixth at 0.62 (n 6, keep 2: the 2nd best is 0.62, ties go on) goes on
    run = Run(6)
    for state in run.states:
        state.epoch = 1
    pruner = Pruner("asha", [], min_epochs=1, eta=3)
    decisions = [pruner.end(run, [m], [{"val_score": v}]) for m, v in enumerate([0.6, 0.45, 0.5, 0.65, 0.62, 0.62])]
    assert decisions == [{}, {}, {2: "pruned"}, {}, {4: "pruned"}, {}]
    # the earlier rounds' scores at the rung count towards the eta: with two of them the first trial can be pruned
    history = [Trial(0, {}, 0.7, "complete", {0: 0.7}), Trial(1, {}, 0.8, "complete", {0: 0.8})]
    assert Pruner("asha", history, min_epochs=1, eta=3).end(run, [0], [{"val_score": 0.6}]) == {0: "pruned"}
    assert Pruner("asha", history[:1], min_epochs=1, eta=3).end(run, [0], [{"val_score": 0.6}]) == {}


def test_median_rule_compares_with_complete_trials_at_the_same_epoch():
    # complete trials' medians: after 1 epoch 0.45, after 2 0.525, after 3 0.65 (the pruned trial does not count);
    # from min_epochs 2: member 1 (0.5 < 0.525) stops after 2, member 0 (0.6 ≥ 0.525, 0.75 ≥ 0.65) and member 2 go on
    run, step = _fit(CURVES, pruner := Pruner("median", HISTORY, min_epochs=2))
    assert step.left == [[1], [0, 2]] and pruner.pruned_epoch == {1: 1}
    # with running_best member 1's 0.5 is still below 0.525; member 2's 0.2 then 0.9 is fine
    _, step = _fit(CURVES, Pruner("median", HISTORY, min_epochs=1, running_best=True))
    assert step.left == [[2], [1], [0]]  # after 1: 0.2 < 0.45; after 2: 0.5 < 0.525


def test_pruner_resumes_from_its_state():
    # members trained one after another: member 1's decision at the first rung sees member 0's score, recorded
    # before a checkpoint; a pruner without that state would let it go on (the only score at its rung)
    run = Run(3)
    run.states[0].epoch = run.states[1].epoch = 1
    first = Pruner("asha", [], min_epochs=1, eta=2)
    assert first.end(run, [0], [{"val_score": 0.6}]) == {}
    resumed = Pruner("asha", [], min_epochs=1, eta=2)
    resumed.load_state_dict(json.loads(json.dumps(first.state_dict())))  # a checkpoint's round trip
    assert resumed.end(run, [1], [{"val_score": 0.45}]) == {1: "pruned"} and resumed.pruned_epoch == {1: 0}
    assert Pruner("asha", [], min_epochs=1, eta=2).end(run, [1], [{"val_score": 0.45}]) == {}


# ---------------------------------------------------------------------------------------------------- selection


def test_select_takes_the_best_complete_trial_and_the_lowest_number_on_ties():
    history = [Trial(2, {"a": 2}, 0.8), Trial(0, {"a": 0}, 0.7), Trial(1, {"a": 1}, 0.8),
               Trial(3, {"a": 3}, None, "pruned", {0: 0.99}), Trial(4, {"a": 4}, None, "failed")]
    assert select(history, "maximize").number == 1
    assert select(history, "minimize").number == 0
    assert curve(history) == {0: 0.7, 1: 0.8, 2: 0.8, 3: 0.8, 4: 0.8}
    assert curve(history, "minimize") == {0: 0.7, 1: 0.7, 2: 0.7, 3: 0.7, 4: 0.7}
    with pytest.raises(GnnbenchError, match=r"^search ZINC/GCN: none of its 2 trials completed \(1 pruned, "
                                            r"1 failed\); nothing to select"):
        select(history[3:], "maximize", search="ZINC/GCN")
    assert math.isnan(curve([Trial(0, {}, None, "failed"), Trial(1, {}, 0.5)])[0])


# ---------------------------------------------------------------------------------------------------- record


def test_trials_round_trip_through_the_run_record(tmp_path):
    space = parse_space(SUITE_SPACE, "s")
    params = ask(space, [], 3, seed=5)
    trials = [Trial(4, params[0], 0.8125, "complete", {0: 0.5, 1: 0.8125}, round=1),
              Trial(5, params[1], None, "pruned", {0: 0.25}, pruned_epoch=0, round=1),
              Trial(6, params[2], None, "failed", {0: 0.3}, round=1)]
    base = {"model": "GIN", "learning_rate": 0.01, "epochs": 2}
    configs = [apply(base, t.params) for t in trials]
    rows = trial_rows(trials, configs, protocol="fair-comparison", dataset="NCI1", model="GIN", search="NCI1/GIN/0",
                      round=1, split=0, fields=[{"epochs": 2, "train_score": 90.0}, {"epochs": 1},
                                                {"epochs": 1, "status": "diverged", "stop_reason": "diverged"}],
                      metric="accuracy", higher_is_better=True, test_score=77.0)
    assert [r["stage"] for r in rows] == ["trial"] * 3 and {r["test_score"] for r in rows} == {None}
    assert len({r["run_id"] for r in rows}) == 3 and rows[1]["stop_reason"] == "pruned"
    assert json.loads(rows[1]["extra"]) == {"search": "NCI1/GIN/0", "round": 1, "trial": 5, "params": params[1],
                                            "pruned_epoch": 0}
    history = [history_frame([{"epoch": e, "val_metric": v} for e, v in t.intermediate.items()], r["run_id"])
               for t, r in zip(trials, rows, strict=True)]
    path = tmp_path / "records" / "fair-comparison" / "NCI1" / "GIN" / "round1.parquet"
    other = tmp_path / "records" / "fair-comparison" / "NCI1" / "GIN" / "other.parquet"
    write_records(path, rows, history)
    write_records(other, trial_rows([Trial(0, params[0], 0.1)], [configs[0]], protocol="fair-comparison",
                                    dataset="NCI1", model="GIN", search="NCI1/GIN/1", round=0), [])
    back = read_trials([path, other], "NCI1/GIN/0")
    assert back == trials  # params bit for bit, states, intermediate scores, pruned epochs and rounds
    assert read_trials(tmp_path / "records", "NCI1/GIN/1") == [Trial(0, params[0], 0.1, round=0)]
    assert read_trials(read_runs([path]), "NCI1/GIN/0")[1].intermediate == {}  # a DataFrame without histories
    write_records(other, rows[:1])
    with pytest.raises(DataError, match=r"^search NCI1/GIN/0: trial 4 is recorded twice"):
        read_trials([path, other], "NCI1/GIN/0")
