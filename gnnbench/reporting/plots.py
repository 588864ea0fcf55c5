"""Figures of the report: learning curves, test scores per model, and positional encodings on / off.

Every figure is drawn on matplotlib's Agg canvas (pyplot is never imported) and written as PNG and SVG,
atomically, with a fixed SVG hash salt and no date, so the same inputs give byte-identical files. The
``*_figure`` functions build a :class:`matplotlib.figure.Figure` from data frames (what the tests inspect); the
writers around them take the data (the run and history records, a dataset table) and save the figure.

- ``learning_curves``: one figure per benchmarking-gnns dataset (a loss spanning > 4 decades on a log axis), a
  panel per quantity (train loss, validation loss, train metric, validation metric) against the epoch, one
  coloured line per model = the mean over its runs
  (seeds × folds) at each epoch, with a band of ± one standard deviation (population std, ddof = 0, as the
  benchmark's tables). Runs that stopped early (learning rate below ``min_lr``, time budget) leave the mean of
  later epochs to the runs still training; ``curve_statistics`` gives the number of runs behind every point.
- ``score_bars``: test score mean ± std per model from a dataset table — benchmarking-gnns tables
  (``test_metric_mean`` / ``_std``) or fair-comparison tables, where the validation accuracy of the selected
  configurations stands beside the test accuracy (the paper's point: selection is optimistic), with the paper's
  number as a marker where there is one.
- ``pe_bars``: per architecture, the test score without and with Laplacian positional encodings; the pairs come
  from the run configs (``pe_pairs``: ``pos_enc`` true vs false, same ``model``), not from the labels.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from gnnbench.errors import DataError
from gnnbench.io import atomic_path
from gnnbench.records import read_histories, read_runs

PLOT_DPI = 150
CURVE_QUANTITIES = ("train_loss", "val_loss", "train_metric", "val_metric")
METRIC_LABELS = {"accuracy": "accuracy (%)", "weighted_accuracy": "weighted accuracy (%)", "mae": "MAE",
                 "f1": "F1", "log10_mse": "log10 MSE", "hits@10": "Hits@10", "hits@50": "Hits@50",
                 "hits@100": "Hits@100"}
# config keys that may differ between a model and its PE twin (the PE presets narrow the layers to stay in budget)
PE_KEYS = ("pos_enc", "pos_enc_dim", "hidden_dim", "out_dim", "seed")
_PE_SUFFIX = re.compile(r"[-_ ]?pe(?=$|[-_ ])", flags=re.IGNORECASE)


def metric_label(metric: str) -> str:
    """Axis text of a metric name (``accuracy`` → ``accuracy (%)``); unknown names as they are."""
    return METRIC_LABELS.get(metric, metric)


def _colours(n: int) -> list:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def _figure(width: float, height: float):
    """A constrained-layout Figure on an Agg canvas, without importing pyplot."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    try:
        unresolved = matplotlib.get_backend(auto_select=False) is None
    except TypeError:  # matplotlib < 3.10 has no auto_select
        unresolved = "matplotlib.pyplot" not in sys.modules
    if unresolved:  # reading an unresolved "backend" rcParam would import pyplot to pick one
        matplotlib.use("agg")
    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def save_figure(figure, png_path: str | os.PathLike, svg_path: str | os.PathLike) -> None:
    """Write ``figure`` as PNG and SVG, each atomically and byte-reproducibly."""
    import matplotlib

    with matplotlib.rc_context({"svg.hashsalt": "gnnbench"}):
        with atomic_path(png_path) as tmp:
            figure.savefig(tmp, format="png", dpi=PLOT_DPI)
        with atomic_path(svg_path) as tmp:
            figure.savefig(tmp, format="svg", metadata={"Date": None})


# ------------------------------------------------------------------------------------------------ learning curves

def curve_histories(records: pd.DataFrame, histories: pd.DataFrame) -> pd.DataFrame:
    """The per-epoch histories of benchmarking-gnns runs, one row per run and epoch: model (the run's label), seed,
    fold, metric, epoch and ``CURVE_QUANTITIES`` — history records joined to their run records on ``run_id``
    (:mod:`gnnbench.records`). The runs are the records of stage ``run`` that trained an epoch (a baseline trains
    none), in the records' order; one without history rows is a DataError."""
    runs = records[(records["stage"] == "run") & (records["epochs"] > 0)]
    if runs.empty:
        raise DataError("no run histories to plot; check the benchmark's models and seeds in the config")
    joined = runs[["run_id", "model", "seed", "split", "metric"]].merge(histories, on="run_id", how="left")
    missing = joined[joined["epoch"].isna()]
    if not missing.empty:
        first = missing.iloc[0]
        raise DataError(f"run {first['run_id']} ({first['model']}, seed {first['seed']}, fold {first['split']}) has no "
                        "rows in the given history records; rerun snakemake for its job")
    joined = joined.rename(columns={"split": "fold", "train_score": "train_metric", "val_score": "val_metric"})
    joined["epoch"] = joined["epoch"].astype("int64")
    return joined[["model", "seed", "fold", "metric", "epoch", *CURVE_QUANTITIES]]


def load_histories(record_files: Iterable[str | os.PathLike], history_files: Iterable[str | os.PathLike]
                   ) -> pd.DataFrame:
    """:func:`curve_histories` of the given run-record and history-record files (runs in the records' order)."""
    return curve_histories(read_runs(list(record_files)), read_histories(list(history_files)))


def curve_statistics(histories: pd.DataFrame) -> pd.DataFrame:
    """Per model (order of first appearance) and epoch: ``runs`` (how many runs reached the epoch) and the mean
    and population std (ddof = 0) of every quantity over those runs, as columns ``<quantity>_mean`` /
    ``_std``."""
    groups = histories.groupby(["model", "epoch"], sort=False)[list(CURVE_QUANTITIES)]
    mean, std = groups.mean().add_suffix("_mean"), groups.std(ddof=0).add_suffix("_std")
    stats = pd.concat([groups.size().rename("runs"), mean, std], axis=1)
    stats = stats[["runs", *(f"{q}_{s}" for q in CURVE_QUANTITIES for s in ("mean", "std"))]]
    order = {m: i for i, m in enumerate(pd.unique(histories["model"]))}
    stats = stats.reset_index()
    return stats.sort_values(["model", "epoch"], key=lambda c: c.map(order) if c.name == "model" else c,
                             kind="stable").reset_index(drop=True)


def learning_curves_figure(histories: pd.DataFrame, title: str):
    """Four panels (train loss, validation loss, train metric, validation metric) against the epoch (1 = the
    first), one line per model: the mean over its runs, with a ± std band. In panel ``q`` the line of model ``i``
    has the gid ``curve_<q>_<i>``."""
    stats = curve_statistics(histories)
    metric = metric_label(str(histories["metric"].iloc[0]))
    titles = {"train_loss": "Train loss", "val_loss": "Validation loss", "train_metric": f"Train {metric}",
              "val_metric": f"Validation {metric}"}
    models = list(pd.unique(stats["model"]))
    figure = _figure(10.0, 7.0)
    axes = figure.subplots(2, 2, sharex=True)
    for ax, quantity in zip(axes.flat, CURVE_QUANTITIES, strict=True):
        for i, (model, colour) in enumerate(zip(models, _colours(len(models)), strict=True)):
            part = stats[stats["model"] == model]
            x = part["epoch"].to_numpy() + 1
            mean, std = part[f"{quantity}_mean"].to_numpy(), part[f"{quantity}_std"].to_numpy()
            (line,) = ax.plot(x, mean, color=colour, linewidth=1.5, label=model, marker="." if len(x) < 20 else None)
            line.set_gid(f"curve_{quantity}_{i}")
            ax.fill_between(x, mean - std, mean + std, color=colour, alpha=0.2, linewidth=0)
        ax.set_title(titles[quantity])
        ax.set_ylabel(titles[quantity].split(" ", 1)[1] if quantity.endswith("loss") else metric)
        if quantity.endswith("loss") and _spans_decades(stats[f"{quantity}_mean"]):
            ax.set_yscale("log")  # a diverging model (CSL GCN: validation loss 1e6) would flatten the others to 0
        ax.grid(True, alpha=0.3)
    from matplotlib.ticker import MaxNLocator

    for ax in axes[1]:
        ax.set_xlabel("Epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    runs = histories.drop_duplicates(["model", "seed", "fold"]).groupby("model", sort=False).size()
    figure.suptitle(f"{title} — mean ± std over {_runs_text(runs)} per model")
    figure.legend(*axes.flat[0].get_legend_handles_labels(), loc="outside right upper", title="Model")
    return figure


def _spans_decades(values: pd.Series, decades: float = 4.0) -> bool:
    """Whether positive values span more than ``decades`` orders of magnitude (then a log axis shows them all)."""
    positive = values[values > 0]
    return len(positive) > 1 and positive.max() / positive.min() > 10.0 ** decades


def _runs_text(runs: pd.Series) -> str:
    counts = sorted(set(int(v) for v in runs))
    return f"{counts[0]} run{'s' if counts[0] != 1 else ''}" if len(counts) == 1 else \
        f"{counts[0]}–{counts[-1]} runs"


def learning_curves(histories: pd.DataFrame, dataset: str, png_path: str | os.PathLike,
                    svg_path: str | os.PathLike) -> pd.DataFrame:
    """Learning-curve figure of one benchmarking-gnns dataset from its runs' histories (:func:`curve_histories`,
    :func:`load_histories`); returns ``curve_statistics``."""
    save_figure(learning_curves_figure(histories, f"{dataset}: learning curves"), png_path, svg_path)
    return curve_statistics(histories)


# ------------------------------------------------------------------------------------------------ score bars

def _read_table(table: pd.DataFrame | str | os.PathLike) -> pd.DataFrame:
    """A dataset table: given, or read from its Parquet file."""
    if isinstance(table, pd.DataFrame):
        return table
    path = Path(table)
    if not path.is_file():
        raise DataError(f"table {path} does not exist; build it first (snakemake {path})")
    return pd.read_parquet(path)


def score_bars_figure(table: pd.DataFrame, title: str):
    """Bar chart of a dataset table, one group per model (table order) with error bars of ± one std.

    benchmarking-gnns tables (``test_metric_mean``): one bar per model, gid ``bar_test_<i>``. Fair-comparison
    tables (``test_mean``, ``val_mean``): the test accuracy over the outer folds (gid ``bar_test_<i>``) and the
    mean validation accuracy of the selected configurations (gid ``bar_val_<i>``) side by side, and the paper's
    test accuracy as a black marker with its std (gid ``paper``) where the table has it. Bars are over the completed
    runs; a model with diverged runs (table column ``diverged``, fair-comparison ``diverged_runs``) is labelled
    "model (k diverged)", and one without a completed run has no bar.
    """
    if table.empty:
        raise DataError(f"table for '{title}' has no rows; nothing to plot")
    models = table["model"].astype(str).tolist()
    column = next((c for c in ("diverged", "diverged_runs") if c in table), None)
    labels = models if column is None else [f"{m}\n({int(d)} diverged)" if d else m
                                            for m, d in zip(models, table[column].fillna(0), strict=True)]
    x = np.arange(len(models), dtype=float)
    figure = _figure(max(5.0, 2.0 + 0.9 * len(models)), 4.5)
    ax = figure.add_subplot()
    error = {"capsize": 4, "ecolor": "#333333", "error_kw": {"linewidth": 1.2}}
    if "test_metric_mean" in table:
        metric = metric_label(str(table["metric"].iloc[0]))
        bars = ax.bar(x, table["test_metric_mean"], 0.6, yerr=table["test_metric_std"], color=_colours(len(models)),
                      **error)
        for i, bar in enumerate(bars):
            bar.set_gid(f"bar_test_{i}")
        ax.set_ylabel(f"Test {metric} (mean ± std)")
    elif {"test_mean", "val_mean"} <= set(table.columns):
        width = 0.38
        test = ax.bar(x - width / 2, table["test_mean"], width, yerr=table["test_std"], color="#2171b5",
                      label="test (outer folds)", **error)
        val = ax.bar(x + width / 2, table["val_mean"], width, yerr=table["val_std"], color="#fd8d3c",
                     label="validation of the selected configs", **error)
        for i, (t, v) in enumerate(zip(test, val, strict=True)):
            t.set_gid(f"bar_test_{i}")
            v.set_gid(f"bar_val_{i}")
        paper = table["paper_mean"].to_numpy(float) if "paper_mean" in table else np.full(len(models), np.nan)
        if np.isfinite(paper).any():
            ok = np.isfinite(paper)
            marker = ax.errorbar(x[ok] - width / 2, paper[ok], yerr=table["paper_std"].to_numpy(float)[ok], fmt="D",
                                 color="black", markersize=5, capsize=3, label="paper's test")
            marker.lines[0].set_gid("paper")
        ax.set_ylabel("Accuracy (%) (mean ± std over folds)")
        figure.legend(loc="outside lower center", ncols=3, fontsize="small")
    else:
        raise DataError(f"table for '{title}' has neither test_metric_mean (benchmarking-gnns) nor test_mean and "
                        "val_mean (fair-comparison); expected a dataset table written by the workflow")
    ax.set_xticks(x, labels, rotation=30 if len(models) > 4 else 0, ha="right" if len(models) > 4 else "center")
    ax.set_xlim(-0.8, len(models) - 0.2)
    ax.set_xlabel("Model")
    ax.set_title(title)
    ax.yaxis.grid(True, alpha=0.3)
    ax.set_axisbelow(True)
    return figure


def score_bars(table: pd.DataFrame | str | os.PathLike, dataset: str, png_path: str | os.PathLike,
               svg_path: str | os.PathLike) -> None:
    """Bar chart of a dataset's table (a DataFrame, or its file ``results/tables/{dataset}.parquet``)."""
    table = _read_table(table)
    kind = "test vs validation accuracy" if "val_mean" in table and "test_metric_mean" not in table else \
        "test score per model"
    save_figure(score_bars_figure(table, f"{dataset}: {kind}"), png_path, svg_path)


# ------------------------------------------------------------------------------------------------ positional encodings

def _base_label(label: str) -> str:
    return _PE_SUFFIX.sub("", label)


def pe_pairs(configs: Mapping[str, Mapping]) -> list[tuple[str, str, str]]:
    """(architecture, label without PE, label with PE) for every model whose run config has ``pos_enc`` true
    and a model of the same architecture (config ``model``) without it; in the order of the PE models.

    A PE model pairs with the not yet paired model of its architecture whose label equals its own without a
    "PE" token (``GCN-PE`` → ``GCN``); failing that, the one whose config differs in the fewest keys other than
    ``PE_KEYS``; ties go to the first in order. A PE model without a partner has no pair."""
    labels = list(configs)
    plain = [lab for lab in labels if not configs[lab].get("pos_enc")]
    pairs, used = [], set()
    for label in labels:
        config = configs[label]
        if not config.get("pos_enc"):
            continue
        candidates = [p for p in plain if p not in used and configs[p].get("model") == config.get("model")]
        if not candidates:
            continue

        def distance(other: str, config=config, label=label) -> tuple:
            keys = (set(config) | set(configs[other])) - set(PE_KEYS)
            return (_base_label(label) != other,
                    sum(config.get(k) != configs[other].get(k) for k in keys), labels.index(other))

        best = min(candidates, key=distance)
        used.add(best)
        pairs.append((str(config.get("model")), best, label))
    return pairs


def pe_bars_figure(table: pd.DataFrame, pairs: Sequence[Sequence[str]], title: str):
    """Paired bars per architecture: test score mean ± std without (gid ``bar_nope_<i>``) and with
    (``bar_pe_<i>``) positional encodings, for the ``pairs`` (``pe_pairs``) in order. A tick names the
    architecture, and the model without PE where the architecture has several pairs."""
    if not pairs:
        raise DataError(f"'{title}': no model pairs without / with positional encodings to plot")
    rows = table.set_index(table["model"].astype(str))
    missing = [label for pair in pairs for label in pair[1:] if label not in rows.index]
    if missing:
        raise DataError(f"'{title}': model(s) {', '.join(missing)} not in the table; rebuild the table")
    metric = metric_label(str(table["metric"].iloc[0]))
    x = np.arange(len(pairs), dtype=float)
    width = 0.38
    figure = _figure(max(5.0, 2.0 + 1.2 * len(pairs)), 4.5)
    ax = figure.add_subplot()
    error = {"capsize": 4, "ecolor": "#333333"}
    without = [rows.loc[p[1]] for p in pairs]
    with_pe = [rows.loc[p[2]] for p in pairs]
    for offset, part, colour, name, gid in ((-width / 2, without, "#9ecae1", "without PE", "bar_nope"),
                                            (width / 2, with_pe, "#08519c", "with Laplacian PE", "bar_pe")):
        bars = ax.bar(x + offset, [r["test_metric_mean"] for r in part], width,
                      yerr=[r["test_metric_std"] for r in part], color=colour, label=name, **error)
        for i, bar in enumerate(bars):
            bar.set_gid(f"{gid}_{i}")
    architectures = [pair[0] for pair in pairs]
    ticks = [arch if architectures.count(arch) == 1 else f"{arch} ({plain})" for arch, plain, _ in pairs]
    ax.set_xticks(x, ticks, rotation=30 if len(pairs) > 4 else 0, ha="right" if len(pairs) > 4 else "center")
    ax.set_xlabel("Architecture")
    ax.set_ylabel(f"Test {metric} (mean ± std)")
    ax.set_xlim(-0.8, len(pairs) - 0.2)
    ax.set_title(title)
    figure.legend(loc="outside lower center", ncols=2, fontsize="small")
    ax.yaxis.grid(True, alpha=0.3)
    ax.set_axisbelow(True)
    return figure


def pe_bars(table: pd.DataFrame | str | os.PathLike, pairs: Sequence[Sequence[str]], dataset: str,
            png_path: str | os.PathLike, svg_path: str | os.PathLike) -> None:
    """Positional encodings on / off figure of a benchmarking-gnns dataset table (a DataFrame, or its Parquet
    file)."""
    table = _read_table(table)
    save_figure(pe_bars_figure(table, pairs, f"{dataset}: Laplacian positional encodings"), png_path, svg_path)
