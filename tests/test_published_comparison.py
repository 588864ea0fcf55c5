"""Our tables beside the papers' published numbers (gnnbench.reporting.published): the transcribed numbers, the
matching of datasets and models, the z-score verdict, the setting flag, and the columns in the tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from gnnbench.config.presets import run_config
from gnnbench.data.generators import get_generator, resolve_params
from gnnbench.io import write_json
from gnnbench.papers import DWIVEDI2020, ERRICA2020, SHCHUR2018, ZOOS
from gnnbench.protocols.pitfalls import TRAINING_DEFAULTS as P2_TRAINING
from gnnbench.reporting import published as pub


def meta(generator: str, params: dict | None = None, name: str = "D"):
    g = get_generator(generator)
    return g.describe(name, resolve_params(g, params, "test"), 0)


# ---------------------------------------------------------------------------------------------- the numbers


def test_published_files_are_named_by_the_papers_keys():
    # one file per paper of the model registry, read by the key the registry gives the paper (published.py spells
    # the keys itself to stay free of torch: they must be the registry's)
    assert (pub.DWIVEDI2020, pub.SHCHUR2018, pub.ERRICA2020) == (DWIVEDI2020, SHCHUR2018, ERRICA2020)
    assert {p.stem for p in pub.PUBLISHED_DIR.glob("*.yaml")} == set(ZOOS)
    assert pub.load(ERRICA2020) is pub.fair_comparison()


def test_the_benchmarks_tu_variant_is_matched_to_its_tu_table():
    # tu with the benchmark's loader (variant dwivedi2020) is Dwivedi et al.'s TU table; the plain tu generator
    # (Errica et al.'s features) is not a dataset of that paper
    assert pub.benchmarking_gnns_key(meta("tu", {"name": "DD", "variant": DWIVEDI2020}, "DD")) == "TU/DD"
    assert pub.benchmarking_gnns_key(meta("tu", {"name": "PROTEINS_full", "variant": DWIVEDI2020})) == "TU/PROTEINS"
    assert pub.benchmarking_gnns_key(meta("tu", {"name": "DD"}, "DD")) is None


def test_published_numbers_are_the_papers():
    # Shchur et al., Table 1 and Table 2b, copied by hand
    table1 = pub.load(SHCHUR2018)["table1"]["rows"]
    assert table1["GCN"]["CORA"] == [81.5, 1.3] and table1["GAT"]["Amazon-Photo"] == [85.7, 20.3]
    assert table1["GS-mean"]["Coauthor-CS"] == [91.3, 2.8] and table1["LogReg"]["PubMed"] == [64.1, 3.1]
    assert table1["GS-maxpool"]["Amazon-Computers"] == "N/A"
    assert "Coauthor-CS" not in table1["LabelProp"] and table1["LabelProp NL"]["CORA-Full"] == [51.0, 1.0]  # lost
    assert pub.load(SHCHUR2018)["planetoid_split"]["rows"]["GAT"]["CORA"] == [82.8, 0.5]
    assert pub.load(SHCHUR2018)["another_random_split"]["rows"]["MoNet"]["PubMed"] == [70.7, 0.5]
    # Errica et al., Table 3: GIN on ENZYMES and NCI1; Table 4: ECC out of resources on REDDIT-B
    assert pub.fair_comparison()["ENZYMES"]["GIN"] == [59.6, 4.5]
    assert pub.fair_comparison()["NCI1"]["GIN"] == [80.0, 1.4]
    assert pub.fair_comparison()["REDDIT-BINARY/degree"]["ECC"] == "OOR"
    # Dwivedi et al., Table 3 (ZINC): GatedGCN with 105,735 and GatedGCN-E with 105,875 parameters
    zinc = {(r["model"], r["params"]): r["test"] for r in pub.load(DWIVEDI2020)["tables"]["ZINC"]["rows"]
            if "test" in r}
    assert zinc[("GatedGCN", 105735)] == [0.435, 0.011] and zinc[("GatedGCN-E", 105875)] == [0.375, 0.003]


# ---------------------------------------------------------------------------------------------- matching


@pytest.mark.parametrize("generator,params,preset,own,num_params,row,mean", [
    ("zinc", None, "molecules_graph_regression_GatedGCN_ZINC_100k", {}, 105735, "Table 3 GatedGCN L=4", 0.435),
    # the preset's runs variant with edge features is the -E row (its published total 105,875)
    ("zinc", None, "molecules_graph_regression_GatedGCN_ZINC_100k", {"edge_feat": True}, 1, "Table 3 GatedGCN-E",
     0.375),
    ("sbm_pattern", None, "SBMs_node_clustering_GatedGCN_PATTERN_PE_500k", {}, 502457,
     "Table 8 (PATTERN half) GatedGCN-PE L=16", 86.508),
    # same family and parameter count: the edge_feat flag tells TSP's GatedGCN and GatedGCN-E apart
    ("tsp", None, "TSP_edge_classification_GatedGCN_100k", {}, 97858, "Table 9 GatedGCN L=4", 0.791),
    ("tsp", None, "TSP_edge_classification_GatedGCN_100k", {"edge_feat": True}, 97858, "Table 9 GatedGCN-E", 0.808),
    ("released", {"name": "CSL"}, "CSL_graph_classification_GCN_CSL_PE_100k", {}, 103847, "Table 10 GCN", 100.0),
    ("superpixels_mnist", None, "superpixels_graph_classification_GCN_MNIST_100k", {}, 101365,
     "Table 7 (MNIST half) GCN", 90.12),
])
def test_a_paper_preset_matches_its_published_row(generator, params, preset, own, num_params, row, mean):
    config = run_config(preset, own)
    paper = pub.match_benchmarking_gnns(meta(generator, params), config["model"], config, num_params, preset)
    assert paper is not None and paper.row.startswith(row) and paper.mean == mean
    assert paper.n == (100 if row.startswith("Table 10") else 4)  # CSL: 5 folds × 20 seeds; else 4 seeds


def test_no_match_outside_the_papers_datasets_or_configs():
    config = run_config("superpixels_graph_classification_GCN_MNIST_100k")
    # the offline digits superpixels are not the paper's MNIST, though the preset and parameter count are
    assert pub.benchmarking_gnns_key(meta("superpixels_digits")) is None
    assert pub.match_benchmarking_gnns(meta("superpixels_digits"), "GCN", config, 101365, None) is None
    assert pub.benchmarking_gnns_key(meta("zinc", {"subset": False})) is None  # ZINC-full is not Table 3's
    # a parameter count of no published row, without a preset to vouch for it
    assert pub.match_benchmarking_gnns(meta("superpixels_mnist"), "GCN", config, 123, None) is None
    assert pub.match_pitfalls(meta("csbm"), "random_per_class", {"model": "GCN"}) is None
    assert pub.match_fair_comparison(meta("graph_families"), "GIN") is None


def test_pitfalls_family_and_missing_cells():
    cora = meta("npz", {"name": "cora"})
    gat = pub.match_pitfalls(cora, "random_per_class", run_config("pitfalls_GAT"))
    assert (gat.mean, gat.std, gat.n) == (81.8, 1.3, 2000)
    nl = pub.match_pitfalls(meta("npz", {"name": "cora_full"}), "random_per_class", run_config("pitfalls_LabelProp-NL"))
    assert (nl.mean, nl.n) == (51.0, 100)  # LabelProp: one deterministic run per split
    assert pub.match_pitfalls(meta("npz", {"name": "amazon_computers"}), "random_per_class",
                              run_config("pitfalls_GS-maxpool")) is None  # N/A in the paper
    planetoid = pub.match_pitfalls(meta("planetoid", {"name": "pubmed", "standardize": False}), "given",
                                   run_config("pitfalls_GCN"))
    assert (planetoid.mean, planetoid.n) == (79.0, None)  # Table 2b: inits not stated, so no z
    assert np.isnan(pub.compare(78.0, 0.5, 10, planetoid, True, "published")["z_vs_paper"])


# ---------------------------------------------------------------------------------------------- verdict


def test_z_and_verdict_by_hand():
    paper = pub.Paper(0.416, 0.006, 4, "Table 3 GCN")
    # ours 0.400 ± 0.004 over 4 runs: se = sqrt(0.004²/4 + 0.006²/4) = sqrt(4e-6 + 9e-6) = 0.0036056
    row = pub.compare(0.400, 0.004, 4, paper, False, "published")
    assert row["diff_vs_paper"] == pytest.approx(-0.016)
    assert row["z_vs_paper"] == pytest.approx(-0.016 / math.sqrt(13e-6))  # −4.44
    assert row["verdict"] == "ours 4.4σ lower (better)"  # MAE: lower is better
    assert pub.compare(0.400, 0.004, 4, paper, True, "published")["verdict"] == "ours 4.4σ lower (worse)"
    # accuracy: 86.0 ± 1.0 (n 2) vs 85.5 ± 0.5 (n 4): se = sqrt(0.5 + 0.0625) = 0.75, z = 0.667
    close = pub.compare(86.0, 1.0, 2, pub.Paper(85.5, 0.5, 4, "x"), True, "published")
    assert close["z_vs_paper"] == pytest.approx(0.5 / 0.75) and close["verdict"] == "consistent (|z| ≤ 2)"
    high = pub.compare(90.0, 1.0, 4, pub.Paper(85.5, 0.5, 4, "x"), True, "published")
    assert high["z_vs_paper"] == pytest.approx(4.5 / math.sqrt(0.25 + 0.0625)) and high["verdict"] == (
        "ours 8.0σ higher (better)")
    assert pub.compare(100.0, 0.0, 4, pub.Paper(99.0, 0.0, 4, "x"), True, "p")["verdict"] == "ours ∞σ higher (better)"
    missing = pub.compare(0.7, 0.01, 4, pub.Paper(0.693, None, None, "k-NN"), True, "published")
    assert missing["diff_vs_paper"] == pytest.approx(0.007) and np.isnan(missing["z_vs_paper"]) and (
        missing["verdict"] == "")
    assert np.isnan(pub.compare(1.0, 0.1, 4, None, True, "")["paper_mean"])


# ---------------------------------------------------------------------------------------------- setting


def test_setting_is_reduced_when_data_or_training_shrink():
    preset = "SBMs_node_clustering_GCN_PATTERN_100k"
    config = {**run_config(preset, {"epochs": 3}), "seed": 1}
    small = meta("sbm_pattern", {"num_train": 60, "num_val": 20, "num_test": 20, "num_patterns": 2})
    paper = pub.match_benchmarking_gnns(small, "GCN", config, 100923, preset)
    assert paper is not None and paper.mean == 85.498
    assert pub.benchmarking_gnns_setting(small, config, preset, 2, paper, 100923) == (
        "reduced: 100 of 14,000 graphs, dataset num_patterns 2 (paper 100), epochs 3 (paper 1000), 2 of 4 runs")
    full = {**run_config(preset), "seed": 41}
    assert pub.benchmarking_gnns_setting(meta("sbm_pattern"), full, preset, 4, paper, 100923) == "published"
    assert pub.benchmarking_gnns_setting(meta("sbm_pattern"), full, None, 4, paper, 100923) == (
        "reduced: no preset to check the training settings against")
    cora = meta("npz", {"name": "cora"})
    gcn = {**P2_TRAINING, **run_config("pitfalls_GCN")}
    split = {"scheme": "random_per_class", "splits": 100, "train_per_class": 20, "val_per_class": 30}
    p2 = pub.match_pitfalls(cora, "random_per_class", gcn)
    assert pub.pitfalls_setting(cora, split, gcn, "pitfalls_GCN", 2000, p2, P2_TRAINING) == "published"
    assert pub.pitfalls_setting(cora, {**split, "train_per_class": 10}, {**gcn, "num_epochs": 50}, "pitfalls_GCN", 40,
                                p2, P2_TRAINING) == (
        "reduced: split train_per_class 10 (paper 20), num_epochs 50 (paper 100000), 40 of 2,000 runs")
    assert pub.fair_comparison_setting([{"epochs": 5, "patience": 500}], "fair_GIN", 3, 2) == (
        "reduced: 3 of 10 outer folds, 2 of 3 final runs per fold, epochs 5 (paper 1000)")


def test_presets_no_script_ran_have_no_runs_variants():
    # COLLAB's MF preset: `runs` is a note ("not run by any script"), not a list of variants
    preset = "COLLAB_edge_classification_MF"
    config = {**run_config(preset, {"epochs": 2}), "seed": 1}
    assert pub.preset_reference(preset, config) == run_config(preset)
    paper = pub.match_benchmarking_gnns(meta("ogbl_collab"), "MF", config, 60546561, preset)
    assert paper is not None and paper.mean == 44.206
    assert pub.benchmarking_gnns_setting(meta("ogbl_collab"), config, preset, 4, paper, 60546561) == (
        f"reduced: epochs 2 (paper {run_config(preset)['epochs']})")


# ---------------------------------------------------------------------------------------------- end to end


def test_aggregate_tables_put_the_paper_beside_ours(tmp_path):
    from gnnbench.protocols.benchmarking_gnns.tables import aggregate_tables
    from gnnbench.protocols.benchmarking_gnns.train import run_records
    from gnnbench.records import write_records

    dataset = tmp_path / "ds"
    dataset.mkdir()
    small = meta("sbm_pattern", {"num_train": 60, "num_val": 20, "num_test": 20, "num_patterns": 2}, "PATTERN")
    write_json(dataset / "meta.json", small.to_json())
    presets = {"GCN": "SBMs_node_clustering_GCN_PATTERN_100k", "Tiny": "SBMs_node_clustering_GCN_PATTERN_100k"}
    scores = {"GCN": [85.0, 85.2], "Tiny": [60.0, 61.0]}
    files = []
    for label, values in scores.items():
        own = {"epochs": 3} if label == "GCN" else {"epochs": 3, "L": 2, "hidden_dim": 8, "out_dim": 8}
        config = run_config(presets[label], own)
        params = 100923 if label == "GCN" else 1234
        for seed, value in zip((1, 2), values, strict=True):
            path = tmp_path / f"{label}{seed}.parquet"  # the run's record, from its metrics.json content
            write_records(path, run_records({
                "dataset": "PATTERN", "label": label, "model": "GCN", "seed": seed, "fold": 0,
                "metric": "weighted_accuracy", "higher_is_better": True, "data": {"split_scheme": "given"},
                "test": {"metric": value, "loss": 0.1}, "val": {"metric": value, "loss": 0.1},
                "train": {"metric": value, "loss": 0.1}, "num_params": params, "epochs": 3, "seconds_per_epoch": 0.1,
                "total_seconds": 3.6, "total_hours": 0.001, "stop_reason": "epochs", "status": "completed",
                "config": {**config, "seed": seed}}))
            files.append(path)
    csv, md, parquet = (tmp_path.joinpath("t").with_suffix(ext) for ext in (".csv", ".md", ".parquet"))
    aggregate_tables(files, csv, md, parquet, dataset_dir=dataset, presets=presets)
    table = pd.read_parquet(parquet).set_index("model")
    assert list(table.columns[-8:]) == list(pub.COLUMNS)
    gcn = table.loc["GCN"]
    assert (gcn["paper_mean"], gcn["paper_std"], gcn["paper_n"]) == (85.498, 0.045, 4)
    assert gcn["diff_vs_paper"] == pytest.approx(85.1 - 85.498)
    se = math.sqrt(0.1**2 / 2 + 0.045**2 / 4)  # ours: population std of (85.0, 85.2) = 0.1 over 2 runs; 0.0742
    assert gcn["z_vs_paper"] == pytest.approx((85.1 - 85.498) / se) and gcn["verdict"] == "ours 5.4σ lower (worse)"
    assert gcn["setting"] == ("reduced: 100 of 14,000 graphs, dataset num_patterns 2 (paper 100), epochs 3 "
                              "(paper 1000), 2 of 4 runs")
    # the shrunk network still matches through its preset, flagged with what differs
    tiny = table.loc["Tiny"]
    assert tiny["paper_mean"] == 85.498 and "L 2 (paper 4)" in tiny["setting"] and (
        "1,234 parameters (paper 100,923)" in tiny["setting"])
    text = md.read_text()
    assert "| Paper | vs paper |" in text and "85.498 ± 0.045" in text and "z = -5.4: ours 5.4σ lower (worse) †" in text
    assert "† not like-for-like — GCN: reduced: 100 of 14,000 graphs" in text
    assert pd.read_csv(csv)["verdict"].tolist() == table["verdict"].tolist()


def test_a_consistent_verdict_keeps_the_table_row_whole():
    """The verdict "consistent (|z| ≤ 2)" holds pipes: in a Markdown pipe table they are escaped, so the row keeps
    its cells — counted here by GFM's rule (a pipe not after a backslash separates) — and the report's HTML page of
    the table shows the verdict as written, in one cell."""
    import re

    from gnnbench.reporting.report import markdown_to_html

    row = pd.Series({"paper_mean": 10.0, "paper_std": 0.0, "diff_vs_paper": 0.0, "z_vs_paper": 0.0,
                     "verdict": "consistent (|z| ≤ 2)", "setting": "reduced: epochs 30 (paper 1000)"})
    paper, versus = pub.markdown_cells(row, 3)
    line = f"| GCN | {paper} | {versus} | 10.000 |"
    assert len(re.split(r"(?<!\\)\|", line)) - 2 == 4
    page = markdown_to_html(f"| Model | Paper | vs paper | Test |\n|---|---|---|---|\n{line}\n", "CSL")
    cells = re.findall(r"<td[^>]*>(.*?)</td>", page)
    assert len(cells) == 4 and cells[2] == "+0.000, z = +0.0: consistent (|z| ≤ 2) †"


def test_a_paper_number_sits_beside_that_papers_network_only():
    # the same family name from another paper's zoo (its run config names the variant) is another network
    zinc_gcn = run_config("molecules_graph_regression_GatedGCN_ZINC_100k")
    assert pub.match_benchmarking_gnns(meta("zinc"), "GatedGCN", zinc_gcn, 105735, None) is not None
    foreign = {**zinc_gcn, "variant": "errica2020"}
    assert pub.match_benchmarking_gnns(meta("zinc"), "GatedGCN", foreign, 105735, None) is None
    cora, gcn = meta("npz", {"name": "cora"}), run_config("pitfalls_GCN")
    assert pub.match_pitfalls(cora, "random_per_class", gcn).mean == 81.5
    assert pub.match_pitfalls(cora, "random_per_class", {**gcn, "variant": "dwivedi2020"}) is None
    assert pub.match_pitfalls(cora, "random_per_class", {**gcn, "variant": "shchur2018"}).mean == 81.5
    enzymes = meta("tu", {"name": "ENZYMES"}, "ENZYMES")
    assert pub.match_fair_comparison(enzymes, "GIN").mean == 59.6
    assert pub.match_fair_comparison(enzymes, "GIN", {"model": "GIN", "variant": "dwivedi2020"}) is None
