"""The tables of the heterophily protocol (Platonov et al.), from run records: the layer count chosen on validation,
the per-dataset table (test mean ± std over the splits at that count, its validation score, every candidate's
mean validation score) with the paper's number beside it, and the suite table (dataset × model, as the paper lays
out its results). Imports no torch.

Matching a row with the paper (``published/platonov2023.yaml``): the dataset of generator ``heterophily`` by its
``name``; the model of the platonov2023 zoo (no other variant) by its family, ResNet with SGC or adjacency input
features as "ResNet+SGC" / "ResNet+adj". Setting: "published" when the run config trains as the paper did
(:data:`RELEASED` architecture defaults and the protocol's training defaults, ten splits), else "reduced: ..." with
every difference.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from gnnbench.reporting import published as pub
from gnnbench.reporting.formatting import bold_best, mean_std, number

PAPER = "platonov2023"
DECIMALS = 2  # the paper prints two decimals
SPLITS = 10
PAPER_LAYERS = "1,2,3,4,5"  # the layer counts the paper chose among
# train.py's architecture defaults, which every experiment of the paper kept (only num_layers and the input features
# vary in scripts/run_all_experiments.sh)
RELEASED = {"hidden_dim": 512, "hidden_dim_multiplier": 1.0, "num_heads": 8, "normalization": "LayerNorm",
            "dropout": 0.2}


def _extra(value) -> dict:
    return json.loads(value) if isinstance(value, str) and value else {}


def candidates(records: pd.DataFrame) -> pd.DataFrame:
    """Per model and candidate (its ``layers``, from the records' ``extra``): mean and sample std of the validation
    and test scores over the completed splits of the model-selection runs (stage ``inner``), splits and diverged
    runs."""
    inner = records[records["stage"] == "inner"].copy()
    inner["layers"] = [int(_extra(e).get("layers", 0)) for e in inner["extra"]]
    rows = []
    for (model, layers), group in inner.groupby(["model", "layers"], sort=True):
        done = group[group["status"] != "diverged"]
        rows.append({"model": model, "layers": int(layers), "splits": len(group),
                     "diverged": int((group["status"] == "diverged").sum()),
                     "val_mean": done["val_score"].mean(), "val_std": done["val_score"].std(ddof=1),
                     "test_mean": done["test_score"].mean(), "test_std": done["test_score"].std(ddof=1)})
    return pd.DataFrame(rows, columns=["model", "layers", "splits", "diverged", "val_mean", "val_std", "test_mean",
                                       "test_std"])


def select_layers(table: pd.DataFrame) -> dict[str, int]:
    """Model → the candidate of the highest mean validation score (the fewest layers among equal ones; a candidate
    whose every split diverged is never chosen, a model with only such candidates is left out)."""
    chosen = {}
    for model, group in table.groupby("model", sort=False):
        group = group[group["val_mean"].notna()].sort_values("layers")
        if len(group):
            chosen[model] = int(group.loc[group["val_mean"].idxmax(), "layers"])
    return chosen


def dataset_table(records: pd.DataFrame) -> pd.DataFrame:
    """One row per model (suite order): the selected layer count, test and validation mean ± sample std over the
    splits of its scored runs (stage ``run``), splits, diverged runs, and every candidate's mean validation score
    (``val_by_layers``: "L: score" pairs; ``layers_searched``: the candidate counts, "0" for a config as set)."""
    runs = records[records["stage"] == "run"]
    cands = candidates(records)
    rows = []
    for model in dict.fromkeys(runs["model"]):
        group = runs[runs["model"] == model]
        done = group[group["status"] != "diverged"]
        mine = cands[cands["model"] == model]
        rows.append({"model": model, "architecture": group["architecture"].iloc[0],
                     "layers": int(_extra(group["extra"].iloc[0]).get("layers", 0)), "runs": len(group),
                     "diverged": int((group["status"] == "diverged").sum()), "metric": group["metric"].iloc[0],
                     "test_mean": done["test_score"].mean(), "test_std": done["test_score"].std(ddof=1),
                     "val_mean": done["val_score"].mean(), "val_std": done["val_score"].std(ddof=1),
                     "val_by_layers": ", ".join(f"{int(r.layers) or 'as set'}: {number(r.val_mean, DECIMALS)}"
                                                for r in mine.itertuples()),
                     "layers_searched": ",".join(str(int(r.layers)) for r in mine.itertuples())})
    return pd.DataFrame(rows)


def paper_family(config: dict) -> str | None:
    """The paper's name of the model a run config builds (None for a model of another zoo or a user's)."""
    if config.get("variant", PAPER) != PAPER:
        return None
    family = config.get("model")
    features = config.get("input_features") or ["original"]
    if family == "ResNet" and "sgc" in features:
        return "ResNet+SGC"
    if family == "ResNet" and "adjacency" in features:
        return "ResNet+adj"
    return family


def match(meta, config: dict) -> pub.Paper | None:
    """The paper's number of the model ``config`` builds on the dataset of ``meta`` (None: none)."""
    source = meta.source or {}
    if source.get("generator") != "heterophily":
        return None
    section = pub.load(PAPER)["table4"]
    value = section["rows"].get(paper_family(config) or "", {}).get(source.get("params", {}).get("name"))
    if not isinstance(value, list):
        return None
    return pub.Paper(float(value[0]), float(value[1]), int(section["runs"]), paper_family(config))


def setting(config: dict, runs: int, training_defaults: dict, searched: str = PAPER_LAYERS) -> str:
    """"published" or "reduced: ..." (module docstring); ``searched``: the layer counts the model was chosen among
    (comma-separated), a difference unless the paper's 1..5."""
    reference = {**RELEASED, **training_defaults}
    differences = [d for d in pub.config_differences(config, reference, ignore=("seed",)) if not d.endswith("(added)")]
    if searched != PAPER_LAYERS:
        layers = config.get("num_layers") if searched == "0" else searched  # "0": a count fixed by the config
        differences.append(f"layers searched {layers} (paper 1..5)")
    return pub.setting_text(differences + pub.runs_difference(runs, SPLITS, "splits"))


def with_paper(table: pd.DataFrame, meta, configs: dict[str, dict], training_defaults: dict) -> pd.DataFrame:
    """``dataset_table`` with the comparison columns of :mod:`gnnbench.reporting.published` (``configs``: label →
    run config of its scored runs)."""
    out = []
    for _, row in table.iterrows():
        config = configs[row["model"]]
        paper = match(meta, config)
        runs = int(row["runs"]) - int(row["diverged"])
        text = "" if paper is None else setting(config, int(row["runs"]), training_defaults,
                                                str(row.get("layers_searched", PAPER_LAYERS)))
        out.append(pub.compare(row["test_mean"], row["test_std"], runs, paper, True, text))
    return pd.concat([table.reset_index(drop=True), pd.DataFrame(out, columns=pub.COLUMNS)], axis=1)


def dataset_markdown(dataset: str, table: pd.DataFrame) -> str:
    """The dataset table as Markdown: the best test score in bold; the paper's columns where the table has them."""
    metric = "ROC AUC" if (table["metric"] == "roc_auc").any() else "accuracy"
    cells = bold_best([mean_std(r.test_mean, r.test_std, DECIMALS) for r in table.itertuples()], table["test_mean"],
                      DECIMALS)
    paper = "paper_mean" in table
    header = ["model", "layers", f"test {metric} (%)", f"val {metric} (%)", "splits", "val by layers"]
    header += ["paper", "vs paper"] if paper else []
    lines = [f"## {dataset}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for cell, (_, r) in zip(cells, table.iterrows(), strict=True):
        row = [r["model"], str(r["layers"]) if r["layers"] else "as set", cell,
               mean_std(r["val_mean"], r["val_std"], DECIMALS),
               f"{r['runs'] - r['diverged']}" + (f" ({r['diverged']} diverged)" if r["diverged"] else ""),
               r["val_by_layers"]]
        row += list(pub.markdown_cells(r, DECIMALS)) if paper else []
        lines.append("| " + " | ".join(row) + " |")
    text = "\n".join(lines) + "\n\n"
    text += ("Each model at the layer count of its highest mean validation score (selected on validation only); "
             "mean ± sample std over the splits of the test score at each split's best validation step.\n")
    if paper:
        text += "\n" + pub.markdown_note(table)
    return text


def suite_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Model × dataset: "mean ± std" of the selected layer count (``tables``: dataset → :func:`dataset_table`)."""
    models = list(dict.fromkeys(m for t in tables.values() for m in t["model"]))
    rows = []
    for model in models:
        row = {"model": model}
        for dataset, table in tables.items():
            hit = table[table["model"] == model]
            row[dataset] = (mean_std(hit["test_mean"].iloc[0], hit["test_std"].iloc[0], DECIMALS) if len(hit)
                            else "–")
        rows.append(row)
    return pd.DataFrame(rows, columns=["model", *tables])


def suite_markdown(table: pd.DataFrame, tables: dict[str, pd.DataFrame]) -> str:
    """The suite table as Markdown, the best model of each dataset in bold."""
    columns = {}
    for dataset, t in tables.items():
        means = [t.loc[t["model"] == m, "test_mean"].iloc[0] if (t["model"] == m).any() else math.nan
                 for m in table["model"]]
        columns[dataset] = bold_best(table[dataset], np.asarray(means, dtype=float), DECIMALS)
    lines = ["| model | " + " | ".join(tables) + " |", "|---|" + "---|" * len(tables)]
    for i, model in enumerate(table["model"]):
        lines.append(f"| {model} | " + " | ".join(columns[d][i] for d in tables) + " |")
    return ("Test accuracy or ROC AUC (%) at each model's selected layer count, mean ± std over the splits\n"
            "trained (the paper: ten; a reduced run's counts in the dataset tables)\n\n"
            + "\n".join(lines) + "\n")
