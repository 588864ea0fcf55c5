"""Pitfalls reporting (Shchur et al., Tables 1, 2a, 2b, Figure 1; docs/protocols/pitfalls.md#reporting-decisions):
statistics against hand counts and direct computation, the paper's tables rebuilt from constructed runs, and the box
plot's files against the numbers drawn."""

from __future__ import annotations

import math
import re
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

from gnnbench.errors import DataError
from gnnbench.reporting import pitfalls as P

SVG = "{http://www.w3.org/2000/svg}"


def make_runs(records) -> pd.DataFrame:
    """Runs table from (dataset, model, split, init, test_accuracy) records; other columns are filler that
    varies with the run so averages of them can be checked."""
    frame = pd.DataFrame(records, columns=["dataset", "model", "split", "init", "test_accuracy"])
    n = len(frame)
    frame["val_accuracy"] = np.clip(frame["test_accuracy"] + 1.0, 0, 100)
    frame["train_accuracy"] = 100.0
    frame["test_loss"] = 0.5
    frame["val_loss"] = 0.4
    frame["epochs"] = 100 + np.arange(n) % 3
    frame["best_epoch"] = 50 + np.arange(n) % 3
    frame["seconds"] = 1.0 + (np.arange(n) % 2)
    return frame


def cell_runs(dataset, model, per_split: dict[int, list[float]]):
    return [(dataset, model, split, init, value)
            for split, values in per_split.items() for init, value in enumerate(values)]


def spread(mean: float, std: float, n: int) -> np.ndarray:
    """n values with exactly this mean and sample (ddof = 1) standard deviation."""
    z = np.linspace(-1.0, 1.0, n)
    return mean + std * z / z.std(ddof=1)


# ------------------------------------------------------------------------------------------------ Table 2a

def hand_example() -> pd.DataFrame:
    """Per-split scores (mean over 3 inits with offsets -2, -1, +3, so mean ≠ median):
        D1 split 0: A 80, B 80, C 60      (A and B tie for best)
        D1 split 1: A 90, B 63, C 45
        D2 split 0: A 48, C 96            (B has no runs on D2: the missing cell)
    """
    offsets = (-2.0, -1.0, 3.0)
    scores = {("D1", 0): {"A": 80, "B": 80, "C": 60}, ("D1", 1): {"A": 90, "B": 63, "C": 45},
              ("D2", 0): {"A": 48, "C": 96}}
    records = [(d, m, k, i, s + o) for (d, k), row in scores.items() for m, s in row.items()
               for i, o in enumerate(offsets)]
    return make_runs(records)


def test_relative_accuracy_and_average_rank_by_hand():
    table = P.summary_table(hand_example()).set_index("model")
    # relative: A (100 + 100 + 50)/3, B (100 + 70)/2 (D2 left out), C (75 + 50 + 100)/3
    # rank:     A (1.5 + 1 + 2)/3,    B (1.5 + 2)/2,                C (3 + 3 + 1)/3     (tie on D1/0 → 1.5 each)
    assert table.loc["A", "relative_accuracy"] == pytest.approx(250 / 3)
    assert table.loc["B", "relative_accuracy"] == pytest.approx(85.0)
    assert table.loc["C", "relative_accuracy"] == pytest.approx(75.0)
    assert table.loc["A", "average_rank"] == pytest.approx(1.5)
    assert table.loc["B", "average_rank"] == pytest.approx(1.75)
    assert table.loc["C", "average_rank"] == pytest.approx(7 / 3)
    assert table["splits"].to_dict() == {"B": 2, "A": 3, "C": 3}
    # Sorted by relative accuracy (Table 2a order), not by rank: B before A although A ranks better.
    assert table.index.tolist() == ["B", "A", "C"]
    # Table 1 cells: mean ± sample std over all runs. A on D1 = 78, 79, 83, 88, 89, 93: mean 85,
    # squared deviations 49 + 36 + 4 + 9 + 16 + 64 = 178 → std sqrt(178 / 5) (ddof 1; ddof 0 would be 5.4).
    assert table.loc["A", "D1_mean"] == pytest.approx(85.0)
    assert table.loc["A", "D1_std"] == pytest.approx(math.sqrt(178 / 5))
    assert table.loc["A", "D1"] == "85.0 ± 6.0"
    assert table.loc["B", "D2"] == "N/A" and np.isnan(table.loc["B", "D2_mean"])
    lines = P.summary_markdown(table.reset_index()).splitlines()
    assert lines[2] == "| Model | D1 | D2 | Relative accuracy (%) | Average rank |"
    assert lines[4:] == ["| B | 71.5 ± 9.6 | N/A | 85.0 | 1.8 |",
                         "| A | **85.0 ± 6.0** | 48.0 ± 2.6 | 83.3 | 1.5 |",
                         "| C | 52.5 ± 8.5 | **96.0 ± 2.6** | 75.0 | 2.3 |"]


def test_only_the_splits_a_model_has_count():
    records = cell_runs("D", "A", {0: [80.0], 1: [60.0]}) + cell_runs("D", "B", {0: [40.0]})
    records += cell_runs("E", "A", {0: [0.0]}) + cell_runs("E", "B", {0: [0.0]})  # all at 0%: both best
    records += cell_runs("D", "C", {0: [20.0]})  # C has no run on E/0, so that split is not C's
    table = P.summary_table(make_runs(records)).set_index("model")
    # A: D/0 100, D/1 100 (alone), E/0 100; B: D/0 50, E/0 100; C: D/0 25. Ranks: A 1, 1, 1.5; B 2, 1.5; C 3.
    assert table.loc["C", "relative_accuracy"] == pytest.approx(25.0)
    assert table.loc["C", "average_rank"] == 3.0 and table.loc["C", "splits"] == 1
    assert table.loc["A", "relative_accuracy"] == pytest.approx(100.0)
    assert table.loc["B", "relative_accuracy"] == pytest.approx(75.0)
    assert table.loc["A", "average_rank"] == pytest.approx(3.5 / 3)
    assert table.loc["B", "average_rank"] == pytest.approx(1.75)
    assert table.loc["B", "D_std"] != table.loc["B", "D_std"]  # one run: no sample std (NaN) ...
    assert table.loc["B", "D"] == "40.0"  # ... and the cell shows the mean alone


def test_means_equal_up_to_float_noise_tie():
    x, y = [79.1, 68.1, 61.2], [76.2, 71.0, 61.2]  # both sum to 208.4, but their float means differ
    runs = make_runs(cell_runs("D", "X", {0: x}) + cell_runs("D", "Y", {0: y}) + cell_runs("D", "Z", {0: [50.0]}))
    assert P.split_scores(runs).loc[("D", 0), "X"] != P.split_scores(runs).loc[("D", 0), "Y"]
    table = P.summary_table(runs).set_index("model")
    assert table["average_rank"].to_dict() == {"X": 1.5, "Y": 1.5, "Z": 3.0}
    random = make_runs(cell_runs("D", "X", {0: [80.0], 1: [80.0]}) + cell_runs("D", "Y", {0: [70.0], 1: [70.0]}))
    ranking = P.split_ranking_table([("fixed", runs[runs.model != "Z"], "random", random)])
    assert ranking["fixed_rank"].tolist() == [1.5, 1.5] and ranking["random_rank"].tolist() == [1.0, 2.0]
    assert ranking["rank_difference"].tolist() == [-0.5, 0.5] and np.isnan(ranking["kendall_tau"]).all()


def test_summary_matches_a_direct_loop():
    rng = np.random.default_rng(3)
    datasets, models = ["D1", "D2", "D3"], ["M1", "M2", "M3", "M4", "M5"]
    records = []
    for d in datasets:
        for m in models:
            if (d, m) == ("D2", "M4"):
                continue  # a missing cell
            for k in range(6):
                if m == "M5" and k % 2:
                    continue  # a model missing some splits
                # integer accuracies over 2 inits: many exact ties between models
                records += [(d, m, k, i, float(v)) for i, v in enumerate(rng.integers(70, 74, 2))]
    runs = make_runs(records)
    table = P.summary_table(runs).set_index("model")

    scores = {}
    for d, m, k, _, v in records:
        scores.setdefault((d, k), {}).setdefault(m, []).append(v)
    relative = {m: [] for m in models}
    ranks = {m: [] for m in models}
    for per_model in scores.values():
        means = {m: sum(v) / len(v) for m, v in per_model.items()}
        best = max(means.values())
        for m, s in means.items():
            relative[m].append(100 * s / best)
            above = sum(o > s for o in means.values())
            tied = sum(o == s for o in means.values()) - 1
            ranks[m].append(1 + above + tied / 2)
    for m in models:
        assert table.loc[m, "relative_accuracy"] == pytest.approx(sum(relative[m]) / len(relative[m]))
        assert table.loc[m, "average_rank"] == pytest.approx(sum(ranks[m]) / len(ranks[m]))
        assert table.loc[m, "splits"] == len(ranks[m])
        for d in datasets:
            values = [v for dd, mm, _, _, v in records if (dd, mm) == (d, m)]
            if values:
                assert table.loc[m, f"{d}_mean"] == pytest.approx(np.mean(values))
                assert table.loc[m, f"{d}_std"] == pytest.approx(np.std(values, ddof=1))
    assert np.all(np.diff(table["relative_accuracy"].to_numpy()) <= 0)


def test_paper_table1_cells_and_known_relative_accuracy():
    """Runs built from paper Table 1 numbers (CORA, Amazon Computers; GS-maxpool N/A there). Each split's mean
    equals the cell mean, so s(m, d, k) = Table 1 mean and Table 2a's statistics follow by hand."""
    cells = {("CORA", "GCN"): (81.5, 1.3), ("CORA", "GAT"): (81.8, 1.3), ("CORA", "GS-maxpool"): (76.6, 1.9),
             ("Amazon Computers", "GCN"): (82.6, 2.4), ("Amazon Computers", "GAT"): (78.0, 19.0)}
    z = np.tile([-1.0, 1.0, -1.0, 1.0], 3)
    z /= z.std(ddof=1)
    records = [(d, m, i // 4, i % 4, mean + std * z[i]) for (d, m), (mean, std) in cells.items() for i in range(12)]
    table = P.summary_table(make_runs(records))
    assert table["model"].tolist() == ["GCN", "GAT", "GS-maxpool"]
    expected = {"GCN": (81.5 / 81.8 * 100 + 100) / 2, "GAT": (100 + 78.0 / 82.6 * 100) / 2,
                "GS-maxpool": 76.6 / 81.8 * 100}
    for row in table.itertuples():
        assert row.relative_accuracy == pytest.approx(expected[row.model])
    assert table["average_rank"].tolist() == pytest.approx([1.5, 1.5, 3.0])
    lines = P.summary_markdown(table).splitlines()
    assert lines[4:] == ["| GCN | 81.5 ± 1.3 | **82.6 ± 2.4** | 99.8 | 1.5 |",
                         "| GAT | **81.8 ± 1.3** | 78.0 ± 19.0 | 97.2 | 1.5 |",
                         "| GS-maxpool | 76.6 ± 1.9 | N/A | 93.6 | 3.0 |"]


# ------------------------------------------------------------------------------------------------ one dataset

def test_dataset_table_statistics():
    rng = np.random.default_rng(0)
    values = {"GCN": rng.uniform(70, 90, 12), "MLP": rng.uniform(50, 70, 12)}
    records = [("CORA", m, i // 4, i % 4, float(v)) for m in ("MLP", "GCN") for i, v in enumerate(values[m])]
    runs = make_runs(records)
    table = P.dataset_table(runs)
    assert table["model"].tolist() == ["MLP", "GCN"]  # order of first appearance
    for row in table.itertuples():
        x = values[row.model]
        assert (row.dataset, row.runs, row.splits, row.inits) == ("CORA", 12, 3, 4)
        assert row.test_mean == pytest.approx(x.mean())
        assert row.test_std == pytest.approx(np.std(x, ddof=1))
        assert row.test_std != pytest.approx(np.std(x, ddof=0))
        q1, median, q3 = np.percentile(x, [25, 50, 75])
        assert (row.test_q1, row.test_median, row.test_q3) == pytest.approx((q1, median, q3))
        assert (row.test_min, row.test_max) == pytest.approx((x.min(), x.max()))
        assert row.val_mean == pytest.approx(np.clip(x + 1, 0, 100).mean())
        assert row.train_mean == 100.0
        assert row.seconds_per_run == pytest.approx(1.5) and row.epochs_mean == pytest.approx(101.0)
    markdown = P.dataset_markdown(table).splitlines()
    assert markdown[0].startswith("| Model | Runs | Splits × inits | Test accuracy (%) | Median [Q1, Q3] |")
    gcn = table.iloc[1]
    assert markdown[3].startswith(f"| GCN | 12 | 3 × 4 | **{gcn.test_mean:.1f} ± {gcn.test_std:.1f}** | "
                                  f"{gcn.test_median:.1f} [{gcn.test_q1:.1f}, {gcn.test_q3:.1f}] |")


def test_write_table_round_trip(tmp_path):
    table = P.summary_table(hand_example())
    text = P.summary_markdown(table)
    md = (tmp_path / "t").with_suffix(".md")  # (a path built, not written out: the docs check reads "*.md" as links)
    P.write_table(table, text, tmp_path / "t.csv", md, tmp_path / "t.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "t.parquet"), table)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "t.csv", keep_default_na=False, na_values=[""]), table,
                                  check_dtype=False)
    assert md.read_text() == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv", md.name, "t.parquet"]  # no temporaries left


# ------------------------------------------------------------------------------------------------ Table 2b

TABLE_2B = {  # paper Table 2b: (Planetoid split, another random split), mean ± std
    "CORA": {"GCN": ((81.9, 0.8), (79.0, 0.7)), "GAT": ((82.8, 0.5), (77.9, 0.7)),
             "MoNet": ((82.2, 0.7), (77.9, 0.7)), "GS-maxpool": ((77.4, 1.0), (74.5, 0.6))},
    "CiteSeer": {"GCN": ((69.5, 0.9), (68.6, 1.1)), "GAT": ((71.0, 0.6), (67.7, 1.2)),
                 "MoNet": ((70.0, 0.6), (66.8, 1.3)), "GS-maxpool": ((67.0, 1.0), (63.1, 1.2))},
    "PubMed": {"GCN": ((79.0, 0.5), (69.5, 1.0)), "GAT": ((77.0, 1.3), (69.5, 0.6)),
               "MoNet": ((77.7, 0.6), (70.7, 0.5)), "GS-maxpool": ((76.6, 0.8), (70.3, 0.8))},
}


def table_2b_pairs():
    pairs = []
    for dataset, models in TABLE_2B.items():
        fixed = [(dataset, m, 0, i, v) for m, (f, _) in models.items() for i, v in enumerate(spread(*f, 5))]
        random = [(dataset, m, i // 4, i % 4, v) for m, (_, r) in models.items() for i, v in enumerate(spread(*r, 8))]
        pairs.append((f"{dataset} Planetoid split", make_runs(fixed), f"{dataset} random splits", make_runs(random)))
    return pairs


def test_split_ranking_reproduces_table_2b():
    table = P.split_ranking_table(table_2b_pairs())
    assert len(table) == 12 and table["model"].tolist()[:4] == ["GCN", "GAT", "MoNet", "GS-maxpool"]
    by = {(r.fixed_label.split()[0], r.model): r for r in table.itertuples()}
    for dataset, models in TABLE_2B.items():
        for m, ((f_mean, f_std), (r_mean, r_std)) in models.items():
            r = by[dataset, m]
            assert (r.fixed_mean, r.fixed_std, r.random_mean, r.random_std) == pytest.approx(
                (f_mean, f_std, r_mean, r_std))
            assert (r.fixed_runs, r.random_runs, r.random_splits) == (5, 8, 2)
    # The paper's message: GAT wins CORA/CiteSeer and GCN PubMed on the Planetoid split; on another split GCN
    # wins CORA/CiteSeer and MoNet PubMed. Ties (CORA GAT = MoNet 77.9, PubMed GCN = GAT 69.5) share ranks.
    ranks = {d: {m: (by[d, m].fixed_rank, by[d, m].random_rank) for m in TABLE_2B[d]} for d in TABLE_2B}
    assert ranks["CORA"] == {"GCN": (3, 1), "GAT": (1, 2.5), "MoNet": (2, 2.5), "GS-maxpool": (4, 4)}
    assert ranks["CiteSeer"] == {"GCN": (3, 1), "GAT": (1, 2), "MoNet": (2, 3), "GS-maxpool": (4, 4)}
    assert ranks["PubMed"] == {"GCN": (1, 3.5), "GAT": (3, 3.5), "MoNet": (2, 1), "GS-maxpool": (4, 2)}
    assert by["PubMed", "GCN"].rank_difference == 2.5
    # Kendall's tau-b by hand over the 6 model pairs (C concordant, D discordant, T pairs tied in one ranking):
    # CORA C=3 D=2 T=1 → 1/sqrt(6·5); CiteSeer C=4 D=2 → 2/6; PubMed C=2 D=3 T=1 → -1/sqrt(6·5).
    taus = table.groupby("fixed_label", sort=False)["kendall_tau"].agg(["min", "max"])
    assert taus["min"].tolist() == pytest.approx([1 / math.sqrt(30), 1 / 3, -1 / math.sqrt(30)])
    assert (taus["min"] == taus["max"]).all()
    markdown = P.split_ranking_markdown(table)
    assert "### CORA Planetoid split vs CORA random splits" in markdown
    assert "| GAT | **82.8 ± 0.5** | 1 | 77.9 ± 0.7 | 2.5 | +1.5 |" in markdown
    assert "| GCN | 81.9 ± 0.8 | 3 | **79.0 ± 0.7** | 1 | -2 |" in markdown
    assert "Kendall's τ between the two rankings (4 models): 0.333" in markdown
    assert "Kendall's τ between the two rankings (4 models): -0.183" in markdown


# ------------------------------------------------------------------------------------------------ box plot

def svg_groups(path) -> dict[str, ET.Element]:
    return {g.get("id"): g for g in ET.parse(path).getroot().iter(f"{SVG}g") if g.get("id")}


def path_ys(group: ET.Element) -> np.ndarray:
    numbers = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", group.find(f"{SVG}path").get("d"))]
    return np.asarray(numbers[1::2])


def box_runs() -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    gat = np.concatenate([rng.normal(88, 1.5, 54), [25.0, 30.0, 31.5, 35.0, 38.0, 39.9]])  # GAT on Amazon Photo
    values = {"GCN": np.clip(rng.normal(91, 1.2, 60), 0, 100), "GAT": np.clip(gat, 0, 100),
              "MLP": rng.uniform(60, 80, 60)}
    records = [("Amazon Photo", m, i // 20, i % 20, float(v)) for m, x in values.items() for i, v in enumerate(x)]
    return make_runs(records), values


@pytest.mark.parametrize("show_outliers", [False, True])
def test_box_plot_statistics_and_files(tmp_path, show_outliers):
    from matplotlib.cbook import boxplot_stats
    from matplotlib.image import imread

    runs, values = box_runs()
    png, svg = tmp_path / "photo.png", tmp_path / "photo.svg"
    stats = P.box_plot(runs, "Amazon Photo", png, svg, show_outliers=show_outliers)
    assert list(stats) == ["GCN", "GAT", "MLP"]
    for model, x in values.items():
        s = stats[model]
        q1, median, q3 = np.percentile(x, [25, 50, 75])
        inside = x[(x >= q1 - 1.5 * (q3 - q1)) & (x <= q3 + 1.5 * (q3 - q1))]
        assert (s["q1"], s["median"], s["q3"]) == pytest.approx((q1, median, q3))
        assert (s["whisker_low"], s["whisker_high"]) == pytest.approx((inside.min(), inside.max()))
        assert s["outliers"] == len(x) - len(inside) and s["runs"] == len(x)
        reference = boxplot_stats(x, whis=1.5)[0]  # matplotlib's own statistics agree
        assert (s["whisker_low"], s["whisker_high"]) == pytest.approx((reference["whislo"], reference["whishi"]))
        assert s["outliers"] == len(reference["fliers"])
    assert stats["GAT"]["outliers"] == 6 and stats["GAT"]["whisker_low"] > 80

    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert height == 4 * P.PLOT_DPI and width >= height
    image = imread(png)
    assert image.shape[:2] == (height, width) and image[..., :3].std() > 0.05

    groups = svg_groups(svg)
    assert sorted(g for g in groups if g.startswith("box_")) == ["box_0", "box_1", "box_2"]
    # The drawn geometry is the returned statistics: one linear data → pixel map fits every box edge, median
    # and whisker end.
    data_y, pixel_y = [], []
    for i, s in enumerate(stats.values()):
        box = path_ys(groups[f"box_{i}"])
        data_y += [s["q1"], s["q3"]]
        pixel_y += [box.max(), box.min()]  # SVG y grows downwards
    a, b = np.polyfit(data_y, pixel_y, 1)
    assert a < 0 and np.allclose(np.polyval([a, b], data_y), pixel_y, atol=0.01)
    for i, s in enumerate(stats.values()):
        assert path_ys(groups[f"median_{i}"]) == pytest.approx(a * s["median"] + b, abs=0.01)
        assert sorted(path_ys(groups[f"whisker_low_{i}"])) == pytest.approx(
            sorted([a * s["q1"] + b, a * s["whisker_low"] + b]), abs=0.01)
        assert sorted(path_ys(groups[f"whisker_high_{i}"])) == pytest.approx(
            sorted([a * s["q3"] + b, a * s["whisker_high"] + b]), abs=0.01)
        if show_outliers:
            assert len(list(groups[f"outliers_{i}"].iter(f"{SVG}use"))) == s["outliers"]
        else:
            assert f"outliers_{i}" not in groups


def test_box_plot_svg_is_reproducible(tmp_path):
    runs, _ = box_runs()
    P.box_plot(runs, "Amazon Photo", tmp_path / "a.png", tmp_path / "a.svg")
    P.box_plot(runs, "Amazon Photo", tmp_path / "b.png", tmp_path / "b.svg")
    assert (tmp_path / "a.svg").read_bytes() == (tmp_path / "b.svg").read_bytes()
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()


def test_reporting_never_imports_pyplot(tmp_path):
    code = ("import sys, pandas as pd\n"
            "import gnnbench.reporting.pitfalls as P\n"
            "assert 'matplotlib' not in sys.modules\n"
            "P.box_plot(pd.DataFrame({'model': ['a', 'a', 'b'], 'test_accuracy': [1.0, 2.0, 3.0]}), 't', "
            "sys.argv[1], sys.argv[2])\n"
            "assert 'matplotlib.pyplot' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "a.png"), str(tmp_path / "a.svg")], check=True)
    assert (tmp_path / "a.png").stat().st_size > 1000


# ------------------------------------------------------------------------------------------------ bad input

def broken(change):
    runs = hand_example()
    change(runs)
    return runs


BOTH = (P.summary_table, P.dataset_table)  # summary_table needs only the score columns


@pytest.mark.parametrize("runs, words, builds", [
    (pd.DataFrame(columns=list(P.RUN_COLUMNS)), ["empty"], BOTH),
    (hand_example().drop(columns=["test_accuracy"]), ["test_accuracy", "add them"], BOTH),
    (hand_example().drop(columns=["test_accuracy", "seconds"]), ["test_accuracy, seconds"], [P.dataset_table]),
    (broken(lambda r: r.__setitem__("test_accuracy", r["test_accuracy"] * 2)), ["test_accuracy", "[0, 100]"], BOTH),
    (broken(lambda r: r.loc.__setitem__((3, "val_accuracy"), np.nan)), ["val_accuracy", "NaN"], [P.dataset_table]),
    (broken(lambda r: r.__setitem__("train_accuracy", "99%")), ["train_accuracy", "float"], [P.dataset_table]),
    (pd.concat([hand_example(), hand_example().iloc[[4]]]), ["more than one row", "model=B", "split=0"], BOTH),
])
def test_bad_runs_raise_one_line_data_errors(runs, words, builds):
    for build in builds:
        with pytest.raises(DataError) as info:
            build(runs)
        message = str(info.value)
        assert "\n" not in message and all(w in message for w in words), message


def test_bad_input_for_dataset_table_split_ranking_and_box_plot(tmp_path):
    with pytest.raises(DataError, match="2 datasets"):
        P.dataset_table(hand_example())
    (fixed_label, fixed, random_label, random), *_ = table_2b_pairs()
    with pytest.raises(DataError, match="span 2 splits"):
        P.split_ranking_table([(fixed_label, random, random_label, random)])
    with pytest.raises(DataError, match="1 model"):
        P.split_ranking_table([(fixed_label, fixed[fixed.model == "GCN"], random_label, random[random.model != "GAT"])])
    with pytest.raises(DataError, match="empty"):
        P.box_plot(pd.DataFrame({"model": [], "test_accuracy": []}), "t", tmp_path / "a.png", tmp_path / "a.svg")
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------------------------------------ diverged runs

def with_diverged(runs: pd.DataFrame, rows) -> pd.DataFrame:
    """``runs`` with a ``status`` column; the runs at ``rows`` (index labels) diverged: they have no scores."""
    runs = runs.copy()
    runs["status"] = "completed"
    runs.loc[rows, "status"] = "diverged"
    runs.loc[rows, ["test_accuracy", "val_accuracy", "train_accuracy", "test_loss", "val_loss"]] = np.nan
    return runs


def test_diverged_runs_are_counted_and_left_out_of_every_statistic():
    runs = hand_example()
    d1 = runs[runs["dataset"] == "D1"]
    a = d1.index[d1["model"] == "A"]
    c = d1.index[d1["model"] == "C"]
    marked = with_diverged(d1, [a[0], *c])  # A: one of its 6 runs; C: all 6
    table = P.dataset_table(marked).set_index("model")
    kept = d1[d1["model"] == "A"].drop(index=a[0])
    assert table.loc["A", "runs"] == 6 and table.loc["A", "diverged"] == 1 and table.loc["B", "diverged"] == 0
    assert table.loc["A", "test_mean"] == pytest.approx(kept["test_accuracy"].mean())
    assert table.loc["A", "test_std"] == pytest.approx(kept["test_accuracy"].std(ddof=1))
    assert table.loc["A", "test_min"] == kept["test_accuracy"].min()
    assert table.loc["A", "epochs_mean"] == pytest.approx(kept["epochs"].mean())
    assert table.loc["C", "diverged"] == table.loc["C", "runs"] == 6 and np.isnan(table.loc["C", "test_mean"])
    markdown = P.dataset_markdown(table.reset_index())
    a_line = next(line for line in markdown.splitlines() if line.startswith("| A "))
    assert f"{kept['test_accuracy'].mean():.1f} ± {kept['test_accuracy'].std(ddof=1):.1f} (1 of 6 diverged)" in a_line
    c_line = next(line for line in markdown.splitlines() if line.startswith("| C "))
    assert "diverged (6 of 6)" in c_line and "nan" not in c_line
    unmarked = P.dataset_table(d1).set_index("model")  # without a status column nothing is diverged
    assert (unmarked["diverged"] == 0).all() and "diverged" not in P.dataset_markdown(unmarked.reset_index())


def test_a_nan_score_is_still_an_error_unless_the_run_diverged():
    runs = with_diverged(hand_example(), [0])
    P.summary_table(runs)
    runs.loc[0, "status"] = "completed"
    with pytest.raises(DataError, match="test_accuracy .* NaN|status 'diverged'"):
        P.summary_table(runs)


def test_summary_scores_a_split_over_its_completed_inits_and_drops_a_split_with_none():
    runs = hand_example()
    b_split1 = runs.index[(runs["model"] == "B") & (runs["split"] == 1) & (runs["dataset"] == "D1")]
    a_d1_0 = runs.index[(runs["model"] == "A") & (runs["split"] == 0) & (runs["dataset"] == "D1")]
    marked = with_diverged(runs, [*b_split1, a_d1_0[2]])  # B: every init of D1/1; A: its +3 init of D1/0
    table = P.summary_table(marked).set_index("model")
    # D1/0 scores: A (78 + 79)/2 = 78.5, B 80, C 60; D1/1: A 90, C 45 (B has no completed run: left out); D2/0 as before
    assert table.loc["B", "splits"] == 1 and table.loc["B", "relative_accuracy"] == pytest.approx(100.0)
    assert table.loc["A", "relative_accuracy"] == pytest.approx((78.5 / 80 * 100 + 100 + 50) / 3)
    assert table.loc["C", "average_rank"] == pytest.approx((3 + 2 + 1) / 3)
    assert table.loc["B", "diverged"] == 3 and table.loc["A", "diverged"] == 1 and table.loc["C", "diverged"] == 0
    assert table.loc["B", "D1"].endswith("(3 of 6 diverged)") and table.loc["B", "D1_mean"] == pytest.approx(80.0)
    assert "(3 of 6 diverged)" in P.summary_markdown(table.reset_index())


def test_split_ranking_and_box_plot_show_diverged_runs(tmp_path):
    fixed = make_runs(cell_runs("F", "A", {0: [80, 82, 84]}) + cell_runs("F", "B", {0: [70, 71, 72]}))
    random = make_runs(cell_runs("R", "A", {0: [60, 62], 1: [61, 63]})
                       + cell_runs("R", "B", {0: [65, 66], 1: [67, 64]}))
    fixed = with_diverged(fixed, [0])
    random = with_diverged(random, [4, 5, 6])
    table = P.split_ranking_table([("F", fixed, "R", random)]).set_index("model")
    assert table.loc["A", "fixed_mean"] == pytest.approx(83.0) and table.loc["A", "fixed_diverged"] == 1
    assert table.loc["B", "random_mean"] == pytest.approx(64.0) and table.loc["B", "random_diverged"] == 3
    assert table.loc["A", "fixed_runs"] == 3 and table.loc["B", "random_runs"] == 4
    markdown = P.split_ranking_markdown(table.reset_index())
    assert "(1 of 3 diverged)" in markdown and "(3 of 4 diverged)" in markdown
    stats = P.box_plot(random, "R", tmp_path / "r.png", tmp_path / "r.svg")
    assert stats["B"]["runs"] == 1 and stats["B"]["diverged"] == 3 and stats["A"]["diverged"] == 0
    assert "B (3 diverged)" in (tmp_path / "r.svg").read_text()
    every = with_diverged(random, list(range(4, 8)))  # B: no completed run, no box
    stats = P.box_plot(every, "R", tmp_path / "e.png", tmp_path / "e.svg")
    assert list(stats) == ["A"] and "B (all 4 diverged)" in (tmp_path / "e.svg").read_text()


def test_a_model_whose_every_run_diverged_has_no_relative_accuracy_or_rank():
    runs = hand_example()
    marked = with_diverged(runs, runs.index[runs["model"] == "B"])
    table = P.summary_table(marked).set_index("model")
    assert np.isnan(table.loc["B", "relative_accuracy"]) and np.isnan(table.loc["B", "average_rank"])
    assert table.loc["B", "splits"] == 0 and table.loc["B", "D1"] == "diverged (6 of 6)"
    assert table.loc["A", "average_rank"] == pytest.approx((1 + 1 + 2) / 3)  # ranked among A and C only
    line = next(line for line in P.summary_markdown(table.reset_index()).splitlines() if line.startswith("| B "))
    assert line == "| B | diverged (6 of 6) | N/A | – | – |"
