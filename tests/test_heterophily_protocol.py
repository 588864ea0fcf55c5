"""Protocol heterophily (Platonov et al.): the released optimisation (warmup, AdamW groups), the ten splits as one
stack (each split as if trained alone), the best validation step, ROC AUC on the binary datasets, the layer count
chosen on validation only, the benchmark block's checks and the paper's numbers beside ours."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gnnbench.errors import ConfigError
from gnnbench.pipeline import generate_dataset, make_split_file
from gnnbench.records import history_path, read_histories, read_runs
from gnnbench.training.split_stack import no_weight_decay, warmup_factor, warmup_steps

PYG_GCN = {"model": "torch_geometric.nn.models.GCN", "hidden_channels": 8, "num_layers": 2, "num_steps": 12,
           "lr": 0.01}


def synthetic_file(n: int = 60, classes: int = 3, seed: int = 0) -> bytes:
    """A file in the release's format: a ring plus random chords stored once, labels that the features hint at,
    ten 50/25/25 splits."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, n)
    x = (np.eye(classes)[labels] + rng.normal(0, 1.0, (n, classes))).astype(np.float32)
    ring = np.stack([np.arange(n), (np.arange(n) + 1) % n], 1)
    chords = rng.integers(0, n, (n, 2))
    edges = np.concatenate([ring, chords[chords[:, 0] != chords[:, 1]]])
    masks = {p: np.zeros((10, n), bool) for p in ("train", "val", "test")}
    for k in range(10):
        order = np.random.default_rng(100 + k).permutation(n)
        masks["train"][k, order[: n // 2]] = True
        masks["val"][k, order[n // 2: 3 * n // 4]] = True
        masks["test"][k, order[3 * n // 4:]] = True
    buffer = io.BytesIO()
    np.savez(buffer, node_features=x, node_labels=labels, edges=edges,
             **{f"{p}_masks": m for p, m in masks.items()})
    return buffer.getvalue()


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    """Two synthetic datasets made by generator heterophily: roman-empire (3 classes, accuracy) and questions
    (binary, ROC AUC); their raw files placed by hand (no pinned SHA-256 for those two)."""
    root = tmp_path_factory.mktemp("heterophily")
    raw = root / "raw" / "heterophily"
    raw.mkdir(parents=True)
    out = {}
    for name, classes in (("roman_empire", 3), ("questions", 2)):
        (raw / f"{name}.npz").write_bytes(synthetic_file(classes=classes, seed=classes))
        generate_dataset("heterophily", name, {"name": name}, 0, root / name, raw_dir=root / "raw")
        make_split_file(root / name, "given", {}, root / f"{name}.json")
        out[name] = (root / name, root / f"{name}.json")
    return out


def train(graphs, tmp_path, name="roman_empire", config=PYG_GCN, **kwargs):
    from gnnbench.protocols.heterophily.train import run_candidate

    dataset, splits = graphs[name]
    out = tmp_path / kwargs.pop("job", "job")
    records = out / "records.parquet"
    metrics = run_candidate(dataset_dir=dataset, splits_path=splits, config=dict(config), seed=0, out_dir=out,
                            records_out=records, **kwargs)
    return metrics, read_runs([records]), read_histories([history_path(records)])


def test_warmup_schedule_and_weight_decay_groups_are_the_released_ones():
    # utils.get_lr_scheduler_with_warmup: (step + 1) / (W + 1) for the W warmup steps, then the full rate
    assert [warmup_factor(s, 3) for s in range(5)] == [0.25, 0.5, 0.75, 1.0, 1.0]
    assert [warmup_factor(s, 0) for s in range(2)] == [1.0, 1.0]
    assert warmup_steps({"num_steps": 1000, "warmup_proportion": 0.1}) == 100
    assert warmup_steps({"num_steps": 1000, "warmup_proportion": 0.1, "num_warmup_steps": 7}) == 7
    assert warmup_steps({"num_steps": 1000, "warmup_proportion": 0.0}) == 0
    # utils.get_parameter_groups: no weight decay on biases and normalisation parameters
    assert [no_weight_decay(n) for n in ("input_linear.weight", "input_linear.bias", "layers.0.normalization.weight",
                                         "layers.0.feed_forward.linear_1.weight", "layer_norm.weight")] == [
        False, True, True, False, True]


def test_stack_of_ten_splits_equals_each_split_trained_alone(graphs, tmp_path):
    """Without dropout, split k in the stack of ten trains exactly as split k alone: its own masks, its own
    initialisation, its own best step."""
    metrics, stacked, _ = train(graphs, tmp_path, job="all")
    assert metrics["splits"] == list(range(10)) and len(stacked) == 10
    assert (stacked["stage"] == "inner").all() and stacked["metric"].eq("accuracy").all()
    for k in (3, 7):
        _, alone, _ = train(graphs, tmp_path, split_ids=[k], job=f"alone{k}")
        row = stacked[stacked["split"] == k].iloc[0]
        assert alone["scored_epoch"].iloc[0] == row["scored_epoch"]
        for part in ("train", "val", "test"):
            assert alone[f"{part}_score"].iloc[0] == pytest.approx(row[f"{part}_score"], abs=1e-9)
        assert alone["seed"].iloc[0] == row["seed"]
    with pytest.raises(ConfigError, match=r"splits \[10\]: the split file .* has splits 0..9"):
        train(graphs, tmp_path, split_ids=[0, 10], job="missing")
    _, chunked, _ = train(graphs, tmp_path, splits_per_stack=4, job="chunks")  # stacks of 4, 4 and 2 splits
    assert chunked["run_id"].tolist() == stacked["run_id"].tolist()
    assert np.allclose(chunked["test_score"], stacked["test_score"]) and (chunked["epochs"] == 12).all()
    assert stacked["seed"].nunique() == 10  # every split its own initialisation
    assert stacked["val_score"].nunique() > 1


def test_scored_step_is_the_best_validation_step_and_test_is_read_there(graphs, tmp_path):
    _, records, history = train(graphs, tmp_path)
    assert (records["epochs"] == PYG_GCN["num_steps"]).all()
    for r in records.itertuples():
        steps = history[history["run_id"] == r.run_id].sort_values("epoch")
        assert len(steps) == PYG_GCN["num_steps"]
        best = int(np.argmax(steps["val_score"].to_numpy()))  # the first of the highest
        assert r.scored_epoch == best
        assert r.test_score == pytest.approx(steps["test_score"].iloc[best])
        assert r.val_score == pytest.approx(steps["val_score"].max())
    assert history["lr"].eq(PYG_GCN["lr"]).all()  # no warmup by default


def test_warmup_reaches_the_history(graphs, tmp_path):
    _, _, history = train(graphs, tmp_path, config={**PYG_GCN, "num_warmup_steps": 3})
    first = history.groupby("run_id").head(5)["lr"].to_numpy().reshape(-1, 5)
    assert np.allclose(first, 0.01 * np.array([0.25, 0.5, 0.75, 1.0, 1.0]))


def test_binary_dataset_is_scored_by_roc_auc(graphs, tmp_path):
    metrics, records, _ = train(graphs, tmp_path, name="questions", config={**PYG_GCN, "num_steps": 2})
    assert metrics["metric"] == "roc_auc" and records["metric"].eq("roc_auc").all()
    assert records["test_score"].between(0, 100).all()


def test_each_member_is_scored_on_its_own_nodes():
    """The step's scores: member r's ROC AUC (100 · sklearn's, on the class-1 logit difference) or accuracy over
    its own masked nodes only."""
    import torch
    from sklearn.metrics import roc_auc_score

    from gnnbench.training.split_stack import SplitStackStep

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 40, 2, generator=g, dtype=torch.float64)
    labels = torch.randint(0, 2, (40,), generator=g)
    masks = {p: torch.rand(3, 40, generator=g) < 0.5 for p in ("train", "val", "test")}
    step = object.__new__(SplitStackStep)
    step.labels, step.masks, step.rows = labels, masks, [0, 2]  # member 1 has left the stack
    step.metric = "roc_auc"
    scores = step._scores(logits[[0, 2]])
    for i, member in enumerate((0, 2)):
        for part in ("train", "val", "test"):
            mask = masks[part][member].numpy()
            diff = (logits[member, :, 1] - logits[member, :, 0]).numpy()
            assert scores[part][i] == pytest.approx(100 * roc_auc_score(labels.numpy()[mask], diff[mask]))
    # one logit (the zoo's binary output): binary cross-entropy with logits over the member's nodes, as released
    one = logits[[0, 2], :, 1:]
    losses = step._losses(one)
    for i, member in enumerate((0, 2)):
        mask = masks["test"][member]
        expected = torch.nn.functional.binary_cross_entropy_with_logits(one[i, mask, 0], labels[mask].double())
        assert float(losses["test"][i]) == pytest.approx(float(expected))
    assert step._scores(one)["val"][1] == pytest.approx(
        100 * roc_auc_score(labels.numpy()[masks["val"][2].numpy()], one[1, :, 0].numpy()[masks["val"][2].numpy()]))
    step.metric = "accuracy"
    scores = step._scores(logits[[0, 2]])
    right = (logits.argmax(-1) == labels).numpy()
    assert scores["val"][1] == pytest.approx(100 * right[2][masks["val"][2].numpy()].mean())


def test_layer_count_is_chosen_on_validation_never_on_test(tmp_path):
    from gnnbench.protocols.heterophily.select import select
    from gnnbench.protocols.heterophily.train import candidate_history, candidate_records
    from gnnbench.records import write_records

    files = []
    for layers, val, test in ((1, 70.0, 50.0), (2, 60.0, 90.0), (3, 70.0, 95.0)):  # 1 and 3 tie: fewer layers
        results = [{"train_score": 99.0, "val_score": val + k / 100, "test_score": test, "train_loss": 0.1,
                    "val_loss": 0.2, "test_loss": 0.3, "best_step": 4, "steps": 10, "stop_reason": "max_epochs",
                    "status": "completed", "diverged_epoch": None, "seconds": 1.0} for k in range(10)]
        metrics = {"splits": list(range(10)), "results": results, "dataset": "d", "label": "M", "model": "GCN",
                   "config": {"model": "GCN", "num_layers": layers}, "metric": "accuracy", "num_params": 5,
                   "device": "cpu", "versions": {}, "layers": layers,
                   "data": {"split_scheme": "given"}}
        records = candidate_records(metrics, seeds=list(range(10)))
        history = candidate_history(records, [[{"lr": 0.1, "train_loss": 1.0, "val_loss": 1.0, "test_loss": 1.0,
                                                "train_score": 1.0, "val_score": 2.0, "test_score": 3.0}]] * 10)
        path = tmp_path / f"layers{layers}.parquet"
        write_records(path, records, history=history)
        files.append(path)
    selection = select(files, tmp_path / "selected.parquet", tmp_path / "selection.json")
    assert selection["layers"] == 1 and json.loads((tmp_path / "selection.json").read_text())["layers"] == 1
    chosen = read_runs([tmp_path / "selected.parquet"])
    assert (chosen["stage"] == "run").all() and len(chosen) == 10
    assert chosen["test_score"].eq(50.0).all()  # the first candidate's runs, though 2 and 3 test higher
    assert {json.loads(e)["layers"] for e in chosen["extra"]} == {1}
    assert len(read_histories([history_path(tmp_path / "selected.parquet")])) == 10


def test_benchmark_block_checks_and_candidates(graphs):
    from gnnbench.data.meta import read_meta
    from gnnbench.protocols.heterophily.plan import Heterophily
    from gnnbench.suite import DatasetSpec

    dataset, _ = graphs["roman_empire"]
    meta = read_meta(dataset)
    spec = DatasetSpec("roman-empire", "heterophily", 0, {"name": "roman_empire", "mirror": ""},
                       {"scheme": "given"}, meta, {"scheme": "given"})
    protocol = Heterophily()
    free = {"model": PYG_GCN["model"], "hidden_channels": 8}
    bench = protocol.benchmark(spec, {"num_layers": [2, 1], "models": {"A": {"set": free},
                                                                       "B": {"set": {**free, "num_layers": 3}}}}, "b")
    assert bench.candidates == {"A": [1, 2], "B": [0]}  # a count fixed by `set` is not searched
    assert bench.candidate_config("A", 2)["num_layers"] == 2 and bench.models["A"].config["lr"] == 3e-5
    assert bench.record_files()[-1].endswith("heterophily/roman-empire/B/selected.parquet")
    assert bench.folds is None  # every split of the given split
    reduced = protocol.benchmark(spec, {"folds": [2, 0], "models": {"A": {"set": free}}}, "b")
    assert reduced.folds == [0, 2]
    for entry, expected in (({"inits": 20, "models": {"A": {"set": free}}}, "b.inits: not a setting of protocol"),
                            ({"num_layers": [0], "models": {"A": {"set": free}}}, "b.num_layers: expected a list"),
                            ({"folds": [1, 1], "models": {"A": {"set": free}}}, "b.folds: expected a list"),
                            ({"folds": [3, 10], "models": {"A": {"set": free}}}, "b.folds: split(s) [10] do not")):
        with pytest.raises(ConfigError) as info:
            protocol.benchmark(spec, entry, "b")
        assert expected in str(info.value) and "\n" not in str(info.value)


def test_tables_put_the_papers_number_beside_ours():
    from types import SimpleNamespace

    from gnnbench.protocols.heterophily import TRAINING_DEFAULTS
    from gnnbench.reporting import heterophily as report

    meta = SimpleNamespace(source={"generator": "heterophily", "params": {"name": "tolokers"}})
    released = {**report.RELEASED, **TRAINING_DEFAULTS, "model": "GCN", "num_layers": 3,
                "input_features": ["original"]}
    table = pd.DataFrame([{"model": "GCN", "runs": 10, "diverged": 0, "test_mean": 83.0, "test_std": 0.7},
                          {"model": "SGC", "runs": 10, "diverged": 0, "test_mean": 80.0, "test_std": 1.0},
                          {"model": "small", "runs": 10, "diverged": 0, "test_mean": 70.0, "test_std": 1.0}])
    configs = {"GCN": released, "SGC": {**released, "model": "ResNet", "input_features": ["original", "sgc"]},
               "small": {**released, "hidden_dim": 64, "num_steps": 100}}
    out = report.with_paper(table, meta, configs, TRAINING_DEFAULTS)
    assert out["paper_mean"].tolist() == [83.64, 80.70, 83.64] and out["paper_std"].tolist() == [0.67, 0.97, 0.67]
    assert out.loc[0, "setting"] == "published" and out.loc[0, "diff_vs_paper"] == pytest.approx(-0.64)
    assert out.loc[0, "z_vs_paper"] == pytest.approx(-0.64 / np.sqrt(0.7**2 / 10 + 0.67**2 / 10))
    assert out.loc[2, "setting"] == "reduced: hidden_dim 64 (paper 512), num_steps 100 (paper 1000)"
    one_count = report.with_paper(table.iloc[:1].assign(layers_searched="2"), meta, configs, TRAINING_DEFAULTS)
    assert one_count.loc[0, "setting"] == "reduced: layers searched 2 (paper 1..5)"
    other = report.with_paper(table.iloc[:1], meta, {"GCN": {**released, "variant": "shchur2018"}}, TRAINING_DEFAULTS)
    assert other["paper_mean"].isna().all()  # another zoo's GCN is not the paper's
    # the filtered graphs have the graph models' numbers (Ribeiro et al.'s reprint); the original graphs and ResNet none
    for name, expected in (("chameleon_filtered", [40.89, np.nan]), ("squirrel_filtered", [39.47, np.nan]),
                           ("chameleon", [np.nan, np.nan])):
        graph = SimpleNamespace(source={"generator": "heterophily", "params": {"name": name}})
        pair = report.with_paper(table.iloc[:2], graph, {"GCN": released, "SGC": {**released, "model": "ResNet"}},
                                 TRAINING_DEFAULTS)
        assert np.allclose(pair["paper_mean"].astype(float), expected, equal_nan=True), name


def test_the_datasets_run_under_protocol_pitfalls_on_their_ten_given_splits(graphs, tmp_path):
    """Another protocol on a heterophilous graph: pitfalls trains its initialisations with early stopping on the
    given splits (fold k = the release's split k)."""
    from gnnbench.config.presets import run_config
    from gnnbench.protocols.pitfalls.train import run_chunk
    from gnnbench.splits import read_splits

    dataset, splits = graphs["roman_empire"]
    config = run_config("pitfalls_GCN", {"num_epochs": 5}, protocol="pitfalls")
    metrics = run_chunk(dataset_dir=dataset, splits_path=splits, splits=[0, 9], config=config, inits=2, seed=0,
                        out_dir=tmp_path / "chunk", records_out=tmp_path / "chunk.parquet")
    runs = read_runs([tmp_path / "chunk.parquet"])
    assert metrics["runs"] == 4 and sorted(runs["split"].unique()) == [0, 9]
    assert runs["split_scheme"].eq("given").all() and runs["epochs"].le(5).all()
    assert read_splits(splits).num_folds == 10


def test_a_killed_job_resumes_to_the_results_of_an_uninterrupted_one(graphs, tmp_path, monkeypatch, caplog):
    """Stopped in its second stack (splits_per_stack 5) after mid-stack checkpoints, the job resumes there: the
    finished stack is not trained again and the records equal an uninterrupted job's."""
    from gnnbench.training.preemption import Preempted
    from gnnbench.training.split_stack import SplitStackStep

    _, straight, straight_history = train(graphs, tmp_path, splits_per_stack=5, job="straight")
    calls, original = {"n": 0}, SplitStackStep.epoch

    def dying(self, run, members):
        calls["n"] += 1
        if calls["n"] == 12 + 7:  # step 7 of the second stack
            raise Preempted(15)
        return original(self, run, members)

    monkeypatch.setattr("gnnbench.protocols.heterophily.train.CHECKPOINT_SECONDS", 0.0)
    monkeypatch.setattr(SplitStackStep, "epoch", dying)
    with pytest.raises(Preempted, match="checkpoint .* run the same command again"):
        train(graphs, tmp_path, splits_per_stack=5, job="killed")
    assert (tmp_path / "killed" / "checkpoint.pt").is_file() and not (tmp_path / "killed" / "metrics.json").exists()
    monkeypatch.setattr(SplitStackStep, "epoch", original)
    caplog.clear()
    with caplog.at_level("INFO"):
        _, resumed, resumed_history = train(graphs, tmp_path, splits_per_stack=5, job="killed")
    assert "resuming torch_geometric.nn.models.GCN layers 0 splits 5..9 from" in caplog.text
    assert "at epoch 6" in caplog.text and "splits 0..4 from" not in caplog.text  # the first stack is not retrained
    columns = [c for c in straight.columns if c != "seconds"]
    pd.testing.assert_frame_equal(resumed[columns], straight[columns])
    keep = [c for c in straight_history.columns if c != "seconds"]
    pd.testing.assert_frame_equal(resumed_history[keep], straight_history[keep])


def _platonov_zoo() -> bool:
    from gnnbench.models.registry import REGISTRY

    return ("GCN", "platonov2023") in REGISTRY


@pytest.mark.skipif(not _platonov_zoo(), reason="the platonov2023 zoo (ResNet, GCN, SAGE, GAT, GT, ...) is not "
                                                "registered in this checkout")
def test_the_paper_suite_and_the_example_plan_every_model_at_every_layer_count():
    from gnnbench.suite import load_suite_file

    root = Path(__file__).resolve().parents[1] / "config" / "suites"
    paper = load_suite_file(root / "heterophily.yaml")
    assert len(paper.benchmarks) == 9
    candidates = [c for b in paper.benchmarks.values() for m in b.models for c in b.candidates[m]]
    assert len(candidates) == 405 and set(candidates) == {1, 2, 3, 4, 5}
    config = paper.benchmarks["tolokers"].models["ResNet+SGC"].config
    assert config["input_features"] == ["original", "sgc"] and config["lr"] == 3e-5 and config["num_steps"] == 1000
    example = load_suite_file(root / "heterophily-example.yaml")
    assert {c for b in example.benchmarks.values() for m in b.models for c in b.candidates[m]} == {1, 2}
    assert example.benchmarks["chameleon"].models["GCN"].config["hidden_dim"] == 32
    cpu = load_suite_file(root / "heterophily-cpu.yaml")  # the reduced reproduction: the paper's models and width
    tolokers = cpu.benchmarks["tolokers"]
    assert tolokers.folds == [0, 1, 2] and set(tolokers.models) == {"ResNet", "GCN", "SAGE", "GAT-sep"}
    assert cpu.benchmarks["chameleon"].folds == [0, 1, 2, 3, 4] and set(cpu.benchmarks["squirrel"].models) == {
        "ResNet", "GCN", "SAGE"}
    for benchmark in cpu.benchmarks.values():
        for label in benchmark.models:
            config = benchmark.models[label].config
            layers = [2, 4] if benchmark is tolokers else [2]
            assert benchmark.candidates[label] == layers and config["hidden_dim"] == 512 and config["dropout"] == 0.2
            steps = 400 if (benchmark, label) == (tolokers, "SAGE") else 200  # SAGE still rose at step 200
            assert (config["num_steps"], config["lr"]) == (steps, 1.5e-4)
