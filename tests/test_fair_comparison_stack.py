"""The fair-comparison protocol's grid points of one shape trained as one wide stack
(gnnbench.training.best_epoch_stack.HoldoutStack, gnnbench.protocols.fair_comparison.train.run_inner with ``stack``),
and Errica's GIN with dropout modules: the same masks and results as its functional form.

Member-equals-alone: in float64 with dropout 0 a member of a stack (its own learning rate, weight decay, stopping
rule and patience) equals the same configuration trained alone by ``train_holdout`` on the stack's batch order
(the first member's stream), and a member that stops early leaves the others unchanged."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from gnnbench.config.keys import coerce_all, protocol_types
from gnnbench.data.batching import GraphLoader
from gnnbench.models.build import ModelData, build_model, count_parameters
from gnnbench.models.graph_classifiers.gin import GIN as GINModel
from gnnbench.papers import ERRICA2020
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.protocols import fair_comparison as fc
from gnnbench.protocols.fair_comparison import grid as fc_grid
from gnnbench.protocols.fair_comparison import plan as fc_plan
from gnnbench.protocols.fair_comparison import train as fc_train
from gnnbench.training.best_epoch import train_holdout

GIN = {"model": "GIN", "hidden_units": [8, 8], "train_eps": True, "aggregation": "sum", "dropout": 0.5,
       "dropout_layer0_at_eval": True, "batch_size": 16, "learning_rate": 0.01, "optimizer": "Adam",
       "scheduler": "step", "scheduler_step_size": 3, "scheduler_gamma": 0.5, "l2": 0.0, "gradient_clipping": 0.0,
       "epochs": 6, "patience": 2, "early_stopping": "accuracy", "time_limit_hours": 72.0}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    root = tmp_path_factory.mktemp("gf")
    generate_dataset("graph_families", "GF", {"num_graphs": 60, "features": "degree"}, 1, root / "ds")
    make_split_file(root / "ds", "stratified_kfold", {"folds": 3, "val_fraction": 0.2, "seed": 0}, root / "s.json")
    return root


def _data(families, double=False):
    data = fc_train._load(families / "ds", families / "s.json")
    if double:
        wide = {k: v.double() if v.is_floating_point() else v for k, v in data.store.node.items()}
        data.store = dataclasses.replace(data.store, node=wide)
    parts = {p: torch.from_numpy(v) for p, v in data.splits.fold(0).items()}
    return data, parts


def _builder(data, parts, config, double=False):
    cfg = coerce_all(config, "config", protocol_types(fc_plan.FairComparison, config))
    model_data = ModelData(data.meta, data.sizes, data.store, train_graphs=parts["train"])

    def build():
        model = build_model(cfg, model_data, default_variant=ERRICA2020)
        return model.double() if double else model

    return cfg, build


# ---------------------------------------------------------------------------------------------- GIN's dropout modules


def _functional_forward(model: GINModel, batch):
    """The forward of Errica's GIN as it was written before its dropouts became modules: ``F.dropout`` with the
    rate as a float, term 0 with ``training or dropout_layer0_at_eval``."""
    from gnnbench.models.gin import NeighbourAggregation

    src, dst = batch.edge_index
    keep = src != dst
    edges = batch.edge_index if bool(keep.all()) else batch.edge_index[:, keep]
    aggregate = NeighbourAggregation(edges, batch.num_nodes, "sum", batch.x.dtype)
    x = model.first_h(batch.x)
    p = model.dropouts[0].p
    out = F.dropout(model._pool(model.linears[0](x), batch), p, model.training or model.dropout_layer0_at_eval)
    for conv, linear in zip(model.convs, model.linears[1:], strict=True):
        x = conv(x, aggregate)
        out = out + F.dropout(linear(model._pool(x, batch)), p, model.training)
    return out


@pytest.mark.parametrize("layer0_at_eval", [True, False])
def test_gin_dropout_modules_draw_the_functional_forms_masks(families, layer0_at_eval):
    data, parts = _data(families)
    cfg, build = _builder(data, parts, {**GIN, "dropout_layer0_at_eval": layer0_at_eval})
    torch.manual_seed(3)
    model = build()
    batch = next(iter(GraphLoader(data.store, parts["train"], 16)))
    for mode in (True, False):
        model.train(mode)
        assert model.dropouts[0].training == (mode or layer0_at_eval)
        assert all(d.training == mode for d in model.dropouts[1:])
        with torch.no_grad():
            torch.manual_seed(5)
            modules = model(batch)
            torch.manual_seed(5)
            functional = _functional_forward(model, batch)
        assert torch.equal(modules, functional)
    model.eval()
    with torch.no_grad():  # the as-run default is stochastic at evaluation, the fixed form is not
        assert torch.equal(model(batch), model(batch)) != layer0_at_eval


@pytest.mark.parametrize("units,train_eps", [([8, 8], True), ([8], False)])
def test_gin_parameter_count_and_state_keys_unchanged(families, units, train_eps):
    data, parts = _data(families)
    cfg, build = _builder(data, parts, {**GIN, "hidden_units": units, "train_eps": train_eps})
    model = build()
    f, c, h, n = data.meta.node_features.size, data.meta.num_outputs, units[0], len(units)
    mlp0 = (f * h + h) + 2 * h + (h * h + h) + 2 * h
    conv = 2 * (h * h + h) + 2 * (2 * h) + (1 if train_eps else 0)
    assert count_parameters(model) == mlp0 + n * conv + (n + 1) * (h * c + c)
    assert not any(k.startswith("dropouts") for k in model.state_dict())  # no new state: old checkpoints load
    assert model.dropout == 0.5


def test_gin_training_run_is_unchanged_by_the_dropout_modules(families, monkeypatch):
    """A whole train_holdout run (dropout in training, term-0 dropout at evaluation) gives the same history with the
    modules as with the functional forward."""
    data, parts = _data(families)
    cfg, build = _builder(data, parts, {**GIN, "epochs": 3, "patience": 10})
    histories = []
    for forward in (GINModel.forward, _functional_forward):
        monkeypatch.setattr(GINModel, "forward", forward)
        torch.manual_seed(7)
        out = train_holdout(build(), data.store, parts, cfg, device=torch.device("cpu"))
        histories.append([{k: v for k, v in row.items() if k != "seconds"} for row in out["history"]])
    assert histories[0] == histories[1]


# ---------------------------------------------------------------------------------------------- member stacks

# every member its own learning rate, weight decay, stopping rule and patience; two do not learn ε (frozen at 0);
# weight decay > 0 everywhere: without it the gradient of a bias just before a train-mode batch norm is rounding
# noise (batch norm removes that bias) that Adam normalises into steps of about the learning rate, different for any
# two orders of summation (the stack's grouped products and a model's own), so equality to 1e-9 needs it
MEMBERS = [{"learning_rate": 0.01, "l2": 2e-3, "early_stopping": "accuracy", "patience": 3},
           {"learning_rate": 0.003, "l2": 1e-3, "early_stopping": "loss", "patience": 2, "train_eps": False},
           {"learning_rate": 0.02, "l2": 1e-2, "early_stopping": "accuracy", "patience": 1},
           {"learning_rate": 0.005, "l2": 5e-3, "early_stopping": "loss", "patience": 4, "train_eps": False}]
REL = 1e-9  # float64: two summation orders drift apart by up to 1.1e-10 in 8 epochs on some CPUs (an AMD EPYC)


def _stack(families, members, seeds, perturb=None, **common):
    """A HoldoutStack of GIN configurations (float64, dropout 0) and their alone runs' ingredients; ``perturb``: one
    more member with these settings whose results are not compared (it must not change the others)."""
    from gnnbench.training.best_epoch_stack import HoldoutStack, fit_stack

    data, parts = _data(families, double=True)
    configs = [{**GIN, "dropout": 0.0, "epochs": 8, **common, **m} for m in members]
    if perturb is not None:
        configs.append({**GIN, "epochs": 8, **common, **perturb})
        seeds = [*seeds, 99]
    cfgs = [coerce_all(c, "config", protocol_types(fc_plan.FairComparison, c)) for c in configs]
    model_data = ModelData(data.meta, data.sizes, data.store, train_graphs=parts["train"])
    built = [fc_grid.member_build(c) for c in cfgs]
    builds = [lambda c=b: build_model(c, model_data, default_variant=ERRICA2020).double() for b, _ in built]
    stack = HoldoutStack(builds, seeds, cfgs, data.store, parts, device=torch.device("cpu"),
                         frozen=[set(f) for _, f in built])
    final, real_leave = {}, stack.leave

    def leave(members):  # each member's weights as it leaves the stack
        for m in members:
            final[m] = stack.member_state_dict(m)
        real_leave(members)

    stack.leave = leave
    results = fit_stack(stack)
    return data, parts, cfgs, model_data, results, final


def _alone(data, parts, cfg, model_data, seed, stream_seed):
    """The configuration trained alone by train_holdout from its own initialisation (``seed``) on the stack's batch
    order: the global RNG of the first member after its initialisation."""
    torch.manual_seed(stream_seed)
    build_model(member_cfg := fc_grid.member_build(cfg)[0], model_data, default_variant=ERRICA2020)
    assert member_cfg is not None
    stream = torch.get_rng_state()
    torch.manual_seed(seed)
    model = build_model(cfg, model_data, default_variant=ERRICA2020).double()
    torch.set_rng_state(stream)
    return model, train_holdout(model, data.store, parts, cfg, device=torch.device("cpu"))


def _same(stacked, alone):
    assert (stacked["best_epoch"], stacked["epochs"], stacked["stop_reason"], stacked["status"]) == (
        alone["best_epoch"], alone["epochs"], alone["stop_reason"], alone["status"])
    for row_s, row_a in zip(stacked["history"], alone["history"], strict=True):
        for key in ("train_accuracy", "val_accuracy", "test_accuracy"):
            assert row_s[key] == row_a[key], (row_s["epoch"], key)
        for key in ("train_loss", "val_loss", "test_loss", "lr"):
            assert row_s[key] == pytest.approx(row_a[key], rel=REL, abs=0), (row_s["epoch"], key)
    assert stacked["scores"].keys() == alone["scores"].keys()


@pytest.mark.parametrize("common", [{}, {"optimizer": "SGD", "learning_rate": 0.05, "gradient_clipping": 0.5}])
def test_each_member_is_its_configuration_trained_alone(families, common):
    """Members with their own learning rate, weight decay, stopping rule, patience and train_eps, beside a member
    that drops out (0.5): each member without dropout equals its run alone on the stack's batch order, weights
    included (ε stays exactly 0 where it is not learnt); members stop at different epochs and leave the stack."""
    seeds = [11, 22, 33, 44]
    members = [{k: v for k, v in m.items() if not (common and k == "learning_rate")} for m in MEMBERS]
    data, parts, cfgs, model_data, results, final = _stack(families, members, seeds, perturb={"dropout": 0.5},
                                                           **common)
    assert len({r["epochs"] for r in results[:4]}) > 1  # members stopped at different epochs and left the stack
    assert {r["stop_reason"] for r in results[:4]} == {"patience", "max_epochs"}
    for r in range(4):
        model, alone = _alone(data, parts, cfgs[r], model_data, seeds[r], seeds[0])
        _same(results[r], alone)
        own = model.state_dict()
        for name, value in final[r].items():
            torch.testing.assert_close(value, own[name].reshape(value.shape), rtol=1e-9, atol=1e-10)
        assert results[r]["num_params"] == count_parameters(model)
        if not cfgs[r]["train_eps"]:
            assert all(float(v) == 0.0 for k, v in final[r].items() if k.endswith(".eps"))


def test_a_member_that_stops_early_leaves_the_others_unchanged(families):
    """The same two members trained with and without a third that stops after its first epochs: identical."""
    pair = _stack(families, MEMBERS[:2], [11, 22])[4]
    trio = _stack(families, [*MEMBERS[:2], {**MEMBERS[2], "patience": 1, "epochs": 2}], [11, 22, 33])[4]
    assert trio[2]["epochs"] < min(trio[0]["epochs"], trio[1]["epochs"])
    for a, b in zip(pair, trio[:2], strict=True):
        _same(a, b)


# ---------------------------------------------------------------------------------------------- jobs


SAGE = {"model": "GraphSAGE", "num_layers": 2, "dim_embedding": 8, "aggregation": "max", "batch_size": 16,
        "learning_rate": 0.01, "optimizer": "Adam", "scheduler": "none", "l2": 0.0, "gradient_clipping": 0.0,
        "epochs": 2, "patience": 500, "early_stopping": "accuracy", "time_limit_hours": 72.0}


def _inner(families, out, configs, stack):
    fc_train.run_inner(dataset_dir=families / "ds", splits_path=families / "s.json", fold=0, configs=configs,
                 positions=list(range(len(configs))), seed=0, out=out / "inner.parquet", device="cpu", threads=1,
                 records_out=out / "records.parquet", stack=stack)
    import pyarrow.parquet as pq

    return pq.read_table(out / "inner.parquet").to_pylist()


def _plain(data, config, parts, seed, out):
    """The configuration's run alone (the single-run path, ``_train_alone``) with ``seed``."""
    from gnnbench.training.engine import Checkpoint, Job

    what = {"fold": 0, "config_id": fc_grid.config_id(config), "stage": "selection"}
    job = Job(Checkpoint(out / "plain.checkpoint.pt", "plain", None))
    return fc_train._train_alone(job, data, config, {k: v.numpy() for k, v in parts.items()}, seed, what,
                                 torch.device("cpu"))


def _count(monkeypatch):
    """Counts of trainings: runs alone or observed (one trajectory each) and stacks."""
    from gnnbench.protocols.fair_comparison import train as fc_train_module

    counts = {"alone": 0, "stacks": 0, "members": []}
    real_alone, real_observed, real_stack = (fc_train_module._train_alone, fc_train_module._train_observed,
                                             fc_train_module._train_stack)

    def alone(*args, **kwargs):
        counts["alone"] += 1
        return real_alone(*args, **kwargs)

    def observed(*args, **kwargs):
        counts["alone"] += 1
        return real_observed(*args, **kwargs)

    def stack(job, data, configs, *args, **kwargs):
        result = real_stack(job, data, configs, *args, **kwargs)
        if result is not None:
            counts["stacks"] += 1
            counts["members"].append(len(configs))
        return result

    monkeypatch.setattr(fc_train_module, "_train_alone", alone)
    monkeypatch.setattr(fc_train_module, "_train_observed", observed)
    monkeypatch.setattr(fc_train_module, "_train_stack", stack)
    return counts


def test_an_inner_job_trains_each_shape_as_one_stack_and_the_rest_as_today(families, tmp_path, monkeypatch):
    """Four GIN grid points of one shape (train_eps per member, two stopping rules each) train as one stack of two
    trajectories, each observed by its two configurations; GraphSAGE (not widenable) trains one trajectory for its
    two stopping rules and a run for its other learning rate, each row exactly the run alone with the observer-free
    seed; without stacks the job is today's (a run per configuration, seeds from the whole configuration); a rerun of
    the finished job trains afresh to the same rows."""
    from gnnbench.training.best_epoch_stack import HoldoutStack, fit_stack

    gin = [{**GIN, "hidden_units": [8], "epochs": 3, "train_eps": eps, "early_stopping": rule}
           for eps in (True, False) for rule in ("accuracy", "loss")]
    sage = [{**SAGE, "epochs": 4, "patience": 1}, {**SAGE, "epochs": 6, "patience": 3, "early_stopping": "loss"},
            {**SAGE, "learning_rate": 0.003}]
    configs = [gin[0], sage[0], *gin[1:], sage[1], sage[2]]
    assert fc_grid.stack_groups(configs) == [[0, 2, 3, 4], [1, 5, 6]]
    assert fc_grid.trajectories(configs) == [[0, 2], [1, 5], [3, 4], [6]]
    counts = _count(monkeypatch)
    stacked = _inner(families, tmp_path / "a", configs, True)
    assert (counts["stacks"], counts["members"], counts["alone"]) == (1, [2], 2)  # GIN: one stack; SAGE: 2 runs
    counts.update(alone=0, stacks=0, members=[])
    plain = _inner(families, tmp_path / "b", configs, False)
    assert (counts["stacks"], counts["alone"]) == (0, len(configs))
    assert [list(r) for r in stacked] == [list(r) for r in plain]  # the same columns, rows in the job's order
    data, parts = _data(families)
    parts = {"train": parts["train"], "val": parts["val"]}
    for i, config in enumerate(configs):
        assert plain[i]["seed"] == fc_grid.run_seed(0, 0, fc_grid.seed_key(config))  # unchanged without stacks
        assert stacked[i]["seed"] == fc_grid.run_seed(0, 0, fc_grid.seed_key(fc_grid.trajectory_config(config)))
    drop = ("seconds",)
    for i in (1, 5, 6):  # not widenable: each row is its run alone with the observer-free seed
        alone = _plain(data, configs[i], parts, stacked[i]["seed"], tmp_path)
        assert {k: stacked[i][k] for k in (*fc_train.INNER_COLUMNS[3:], "seed") if k not in drop} == {
            k: alone[k] for k in (*fc_train.INNER_COLUMNS[3:], "seed") if k not in drop}
    assert stacked[1]["epochs"] != stacked[5]["epochs"] or stacked[1]["best_epoch"] != stacked[5]["best_epoch"]
    cfgs = [coerce_all(c, "config", protocol_types(fc_plan.FairComparison, c)) for c in gin]
    built = [fc_grid.member_build(c) for c in cfgs]
    model_data = ModelData(data.meta, data.sizes, data.store, train_graphs=parts["train"])
    builds = [lambda c=b: build_model(c, model_data, default_variant=ERRICA2020) for b, _ in built]
    seeds = [fc_grid.run_seed(0, 0, fc_grid.seed_key(fc_grid.trajectory_config(c))) for c in gin]
    members = fit_stack(HoldoutStack([builds[0], builds[2]], [seeds[0], seeds[2]], [cfgs[0], cfgs[2]], data.store,
                                     parts, device=torch.device("cpu"), frozen=[set(built[0][1]), set(built[2][1])],
                                     observers=[[fc_grid.observer_settings(c) for c in pair]
                                                for pair in (cfgs[:2], cfgs[2:])]))
    for i, member in zip((0, 2, 3, 4), members, strict=True):
        row = stacked[i]
        assert (row["best_epoch"], row["epochs"], row["val_accuracy"], row["val_loss"]) == (
            member["best_epoch"], member["epochs"], member["scores"]["val_accuracy"], member["scores"]["val_loss"])
    counts.update(alone=0, stacks=0, members=[])
    untimed = [{k: v for k, v in r.items() if k != "seconds"} for r in stacked]
    again = _inner(families, tmp_path / "a", configs, True)
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in again] == untimed
    assert (counts["stacks"], counts["members"], counts["alone"]) == (1, [2], 2)


# ---------------------------------------------------------------------------------------------- shared trajectories

RULES = [{"early_stopping": "accuracy"}, {"early_stopping": "loss"}]


def _strip(result):
    """A result without its timings."""
    return {**{k: v for k, v in result.items() if k not in ("seconds", "history", "scores")},
            "scores": {k: v for k, v in result["scores"].items() if k != "seconds"},
            "history": [{k: v for k, v in row.items() if k != "seconds"} for row in result["history"]]}


def test_observer_keys_are_the_trainers():
    from gnnbench.training.best_epoch import OBSERVER_KEYS

    assert fc.OBSERVER_KEYS == OBSERVER_KEYS and set(OBSERVER_KEYS) <= set(fc.MEMBER_KEYS)


def test_one_trajectory_observed_by_two_rules_is_each_run_alone_not_widenable(families):
    """GraphSAGE (float64, no dropout): one train_holdout run observed by two stopping rules gives each rule exactly
    its run alone with the same seed (scores, best and stop epochs, history up to its stop)."""
    data, parts = _data(families, double=True)
    configs = [{**SAGE, "learning_rate": 0.05, "epochs": 10, "patience": 1, **rule} for rule in RULES]
    cfgs = [coerce_all(c, "config", protocol_types(fc_plan.FairComparison, c)) for c in configs]
    _, build = _builder(data, parts, configs[0], double=True)
    torch.manual_seed(5)
    shared = train_holdout(build(), data.store, parts, cfgs[0], device=torch.device("cpu"),
                           observers=[fc_grid.observer_settings(c) for c in cfgs])
    alone = []
    for cfg in cfgs:
        torch.manual_seed(5)
        alone.append(train_holdout(build(), data.store, parts, cfg, device=torch.device("cpu")))
    assert [_strip(r) for r in shared] == [_strip(r) for r in alone]
    assert [(r["epochs"], r["best_epoch"], r["stop_reason"]) for r in shared] == [(5, 3, "patience"),
                                                                                 (7, 5, "patience")]


def test_one_wide_member_observed_by_two_rules_is_each_run_alone(families):
    """GIN (float64, dropout 0): a HoldoutStack of two trajectories, each observed by the accuracy and the loss rule,
    gives every observer its run alone with its trajectory's seed on the stack's batch order."""
    from gnnbench.training.best_epoch_stack import HoldoutStack, fit_stack

    data, parts = _data(families, double=True)
    configs = [{**GIN, "dropout": 0.0, "epochs": 8, **m, "patience": 2, **rule}
               for m in MEMBERS[:2] for rule in RULES]
    cfgs = [coerce_all(c, "config", protocol_types(fc_plan.FairComparison, c)) for c in configs]
    model_data = ModelData(data.meta, data.sizes, data.store, train_graphs=parts["train"])
    built = [fc_grid.member_build(c) for c in cfgs]
    builds = [lambda c=b: build_model(c, model_data, default_variant=ERRICA2020).double() for b, _ in built]
    seeds = [11, 22]
    results = fit_stack(HoldoutStack([builds[0], builds[2]], seeds, [cfgs[0], cfgs[2]], data.store, parts,
                                     device=torch.device("cpu"), frozen=[set(built[0][1]), set(built[2][1])],
                                     observers=[[fc_grid.observer_settings(c) for c in cfgs[:2]],
                                                [fc_grid.observer_settings(c) for c in cfgs[2:]]]))
    assert len(results) == 4
    for a, b in (results[:2], results[2:]):  # in each trajectory the two rules stop and score at other epochs
        assert a["epochs"] > b["epochs"] and a["best_epoch"] > b["best_epoch"]
    for r, result in enumerate(results):
        _, alone = _alone(data, parts, cfgs[r], model_data, seeds[r // 2], seeds[0])
        _same(result, alone)
        for key in ("train_accuracy", "val_accuracy", "test_accuracy", "epoch"):
            assert result["scores"][key] == alone["scores"][key]


@pytest.mark.parametrize("per_job", [4, 8, 3])
def test_jobs_hold_whole_shapes_with_stack_and_the_old_chunks_without(per_job):
    from gnnbench.suite import load_suite

    def benchmark(stack):
        entry = {"protocol": "fair-comparison", "models": {"GIN": "fair_GIN"}, "grid_per_job": per_job,
                 **({"stack": True} if stack else {})}
        suite = {"datasets": {"GF": {"generator": "graph_families", "params": {"num_graphs": 30}}},
                 "benchmarks": {"GF": entry}}
        return load_suite(suite).benchmarks["GF"]

    plain, stacked = benchmark(False), benchmark(True)
    assert (plain.stack, stacked.stack) == (False, True)
    grid = plain.grids["GIN"]
    assert len(grid) == 128
    assert [plain.part_positions("GIN", p) for p in range(plain.num_parts("GIN"))] == [
        list(range(p, min(p + per_job, 128))) for p in range(0, 128, per_job)]  # unchanged without stacks
    parts = [stacked.part_positions("GIN", p) for p in range(stacked.num_parts("GIN"))]
    assert sorted(i for part in parts for i in part) == list(range(128))
    shapes = {fc_grid.shape_key(c) for c in grid}
    assert len(shapes) == 16  # batch size × widths × pooling; dropout, stopping rule and train_eps per member
    for shape in shapes:  # every shape's 8 grid points in one job
        assert sum(any(fc_grid.shape_key(grid[i]) == shape for i in part) for part in parts) == 1
    assert all(len(part) <= max(per_job, 8) for part in parts)
    assert [stacked.part_configs("GIN", p) for p in range(len(parts))] == [[grid[i] for i in part] for part in parts]


class _EveryEpoch:
    """The engine's checkpoint hook: the state a checkpoint would hold after every epoch."""

    def __init__(self) -> None:
        self.states = []

    def due(self) -> bool:
        return True

    def save(self, state: dict) -> None:
        import copy

        self.states.append(copy.deepcopy(state))


def test_an_observed_trajectory_resumes_to_the_same_results(families):
    """The observers' stopping state travels in the fit's checkpoint: resumed after epoch 3 (one observer still
    training, or both), the results equal the uninterrupted run's."""
    from gnnbench.training.best_epoch import holdout_fit, holdout_results
    from gnnbench.training.engine import fit, restore

    data, parts = _data(families, double=True)
    configs = [{**SAGE, "learning_rate": 0.05, "epochs": 10, "patience": 1, **rule} for rule in RULES]
    cfgs = [coerce_all(c, "config", protocol_types(fc_plan.FairComparison, c)) for c in configs]
    observers = [fc_grid.observer_settings(c) for c in cfgs]
    _, build = _builder(data, parts, configs[0], double=True)
    torch.manual_seed(5)
    run, step, rules = holdout_fit(build(), data.store, parts, cfgs[0], device=torch.device("cpu"),
                                   observers=observers)
    every = _EveryEpoch()
    fit(run, step, rules, checkpoint=every)
    whole = holdout_results(run)
    run, step, rules = holdout_fit(build(), data.store, parts, cfgs[0], device=torch.device("cpu"),
                                   observers=observers)
    restore(every.states[2], run, step, rules)  # after epoch 3
    fit(run, step, rules)
    assert [_strip(r) for r in holdout_results(run)] == [_strip(r) for r in whole]


def test_a_stack_of_observed_trajectories_resumes_to_the_same_results(families, tmp_path):
    """A HoldoutStack with observers, checkpointed after every epoch, resumed from its last checkpoint before the
    last observer stopped: the same results as the uninterrupted stack."""
    from gnnbench.training.best_epoch_stack import HoldoutStack
    from gnnbench.training.engine import fit, restore

    data, parts = _data(families, double=True)
    configs = [{**GIN, "dropout": 0.0, "epochs": 6, **m, "patience": 1, **rule} for m in MEMBERS[:2] for rule in RULES]
    cfgs = [coerce_all(c, "config", protocol_types(fc_plan.FairComparison, c)) for c in configs]
    model_data = ModelData(data.meta, data.sizes, data.store, train_graphs=parts["train"])
    built = [fc_grid.member_build(c) for c in cfgs]
    builds = [lambda c=b: build_model(c, model_data, default_variant=ERRICA2020).double() for b, _ in built]

    def make():
        step = HoldoutStack([builds[0], builds[2]], [11, 22], [cfgs[0], cfgs[2]], data.store, parts,
                            device=torch.device("cpu"), frozen=[set(built[0][1]), set(built[2][1])],
                            observers=[[fc_grid.observer_settings(c) for c in cfgs[:2]],
                                       [fc_grid.observer_settings(c) for c in cfgs[2:]]])
        run, rules = step.fit_parts()
        return run, step, rules

    run, step, rules = make()
    every = _EveryEpoch()
    fit(run, step, rules, checkpoint=every)
    whole = step.results(run)
    resumed_from = next(s for s in reversed(every.states) if s["run"]["active"])  # the stack still training
    run, step, rules = make()
    restore(resumed_from, run, step, rules)
    assert 0 < max(s.epoch for s in run.states) < max(r["epochs"] for r in whole)
    fit(run, step, rules)
    assert [_strip(r) for r in step.results(run)] == [_strip(r) for r in whole]
