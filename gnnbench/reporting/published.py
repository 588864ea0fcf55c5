"""The three papers' published numbers and how ours compare with them (one module for all three table writers).

The numbers are data, transcribed from the papers, one file per paper named by its key (the paper keys of
:mod:`gnnbench.models.registry`): ``published/dwivedi2020.yaml`` (Dwivedi et al., P1), ``published/shchur2018.yaml``
(Shchur et al., P2, Tables 1 and 2b) and ``published/errica2020.yaml`` (Errica et al., P3). For one row of one of
our tables this module finds the published number of the same experiment (*matching*), says how far ours is from
it (*verdict*) and whether the two were run under the same conditions (*setting*). Every table row gets the
columns of :data:`COLUMNS` (empty where nothing matches).

Matching — where the information comes from:

* **Dataset** (all papers): ``meta.json`` of the dataset, ``source.generator`` and ``source.params``. P1:
  ``sbm_pattern`` / released PATTERN → PATTERN, ``sbm_cluster`` → CLUSTER, ``superpixels_mnist`` → MNIST,
  ``superpixels_cifar10`` → CIFAR10, ``tsp`` → TSP, ``csl`` / released CSL → CSL, ``cycles`` / ``cycles_release``
  → CYCLES (the row of the training-set size), ``graph_theory_prop`` → GraphTheoryProp, ``zinc`` (the 12k subset)
  → ZINC, ``aqsol``, ``wikics``, ``ogbl_collab``, and ``tu`` with ``variant: dwivedi2020`` (ENZYMES, DD,
  PROTEINS_full) → the TU table. Any other generator (``superpixels_digits``, ``csbm``, ``graph_families``, ZINC-full,
  ...) is not a dataset of the paper: no match. P2: ``npz`` / ``planetoid`` with ``standardize: true`` → Table 1
  (cora, citeseer, pubmed, cora_full, coauthor_*, amazon_*); ``planetoid`` with ``standardize: false`` → Table 2b
  ("Planetoid split" for split scheme ``given``, "Another random split" for ``random_sizes``). P3: the TU name and
  feature variant (:func:`fair_comparison_key`).
* **Model**. P1: a published row matches a model when (1) its family is the model's architecture (``model`` of the
  run config; the paper's "vanilla GCN" rows are not the presets' GCN; MF = "Matrix Fact."); (2) its parameter
  count equals ours (``num_params`` of ``metrics.json``) or the published total of the model's preset — the
  preset is the one the suite names for the label; its ``total_params``, or that of the preset's ``runs`` variant
  whose ``set`` the run config satisfies (e.g. ZINC GatedGCN with ``edge_feat: true``: 105,875 → "GatedGCN-E"),
  counted only when the preset is one of this dataset's (a preset whose architecture the suite changed with ``set``
  still matches this way, and its setting lists the changed keys and parameter count); rows that print no
  parameter count (GraphTheoryProp, the TSP k-NN heuristic) match on family alone; (3) several candidates left
  (same family and count: TSP "GatedGCN" and "GatedGCN-E", both 97,858) are told apart by the name's suffixes:
  "-E" ⇔ ``edge_feat``, "-PE" ⇔ ``pos_enc`` (CSL: the table's PE section; CSL's "All MP-GCNs" row matches any
  message-passing GNN without PE). Still ambiguous, or no candidate: no match. Rows printed as OOM / Diverged have
  no number and never match. P2: the family from the run config: GCN, GAT, MoNet, MLP, LogReg, "GS-<aggregator>"
  for GraphSAGE, "LabelProp" / "LabelProp NL" (``prop_type: smoothed``). P3: the model family (``model``;
  molecular fingerprint and DeepMultisets are "Baseline").

Verdict: ``diff = ours − paper`` and ``z = diff / sqrt(s_ours²/n_ours + s_paper²/n_paper)``, the difference in units
of its standard error, with each side's standard deviation as its table prints it (P1, P3: population std; P2:
sample std) and its number of runs: ours from the table; the paper's from its protocol — P1 4 seeds (CSL 5 folds ×
20 seeds = 100, WikiCS 20 splits × 4 seeds = 80, TU 2 seeds × 10 folds = 20: the two seed rows pooled), P2 2,000
runs (100 splits × 20 inits; LabelProp 100, one per split; Table 2b does not state its inits: no z), P3 10 outer
folds. The verdict reads "consistent (|z| ≤ 2)", or "ours 3.4σ higher (better)" / "ours 5.1σ lower (worse)", where
better / worse follow ``higher_is_better`` (a lower MAE is better). Zero spread on both sides: z = ±∞ for any
difference, 0 for none. No std or n on the paper's side: no z, no verdict (the difference is still given).

Setting: "published" when the row is the paper's experiment at the paper's size, else "reduced: <what differs>"
(the verdict is printed but is not a like-for-like comparison; Markdown marks it †). Checked:

* the data (``meta.json``): every generator parameter that differs from the generator's default (the paper's
  data); size parameters are summarised as "120 of 14,000 graphs" (CYCLES: a training size of the table is the
  paper's); P2 also checks the split (20 train and 30 validation nodes per class; the suite's split config);
* the training settings: the run config (``metrics.json`` ``config``; P3: the selected configuration) against the
  preset's (P1 with the matched ``runs`` variant; P2 with the protocol's training defaults) — every differing key
  except the seed, e.g. "epochs 3 (paper 1000)"; a model built without a preset cannot be checked: "reduced:
  no preset to check the training settings against"; P1 also lists a parameter count other than the printed one;
* the amount of repetition: fewer runs than the paper's (P1 seeds × folds, P2 splits × inits, P3 outer folds and 3
  final runs per fold), e.g. "2 of 4 runs".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from gnnbench.config.presets import all_presets, run_config
from gnnbench.data.generators import get_generator, resolve_params

PUBLISHED_DIR = Path(__file__).resolve().parent / "published"
COLUMNS = ("paper_mean", "paper_std", "paper_n", "paper_row", "diff_vs_paper", "z_vs_paper", "verdict", "setting")
Z_CONSISTENT = 2.0
PUBLISHED = "published"
# The papers' keys (gnnbench.models.registry's DWIVEDI2020, SHCHUR2018, ERRICA2020; a test checks they agree),
# spelled here so that reporting does not import the model registry (and torch).
DWIVEDI2020, SHCHUR2018, ERRICA2020 = "dwivedi2020", "shchur2018", "errica2020"


@cache
def load(name: str) -> dict:
    """The published numbers of one paper (its key: ``dwivedi2020``, ``shchur2018``, ``errica2020``), parsed."""
    return yaml.safe_load((PUBLISHED_DIR / f"{name}.yaml").read_text())


@dataclass(frozen=True)
class Paper:
    """One published number: mean ± std over ``n`` runs (std / n None where the paper gives none), and which row."""

    mean: float
    std: float | None
    n: int | None
    row: str
    params: int | None = None  # the parameter count the paper prints for it (P1)


# ---------------------------------------------------------------------------------------------- verdict


def z_score(diff: float, std_ours: float, n_ours: int, std_paper: float | None, n_paper: int | None) -> float:
    """diff / sqrt(s_ours²/n_ours + s_paper²/n_paper); ±inf for a difference without spread, 0 for none; NaN when a
    std or n is missing."""
    values = (diff, std_ours, n_ours, std_paper, n_paper)
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in values) or not n_ours or not n_paper:
        return math.nan
    se = math.sqrt(std_ours**2 / n_ours + std_paper**2 / n_paper)
    if se == 0:
        return 0.0 if diff == 0 else math.copysign(math.inf, diff)
    return diff / se


def verdict(z: float, higher_is_better: bool) -> str:
    """"consistent (|z| ≤ 2)" or "ours 3.4σ higher (better)"; empty for a NaN z."""
    if math.isnan(z):
        return ""
    if abs(z) <= Z_CONSISTENT:
        return "consistent (|z| ≤ 2)"
    higher = z > 0
    size = "∞" if math.isinf(z) else f"{abs(z):.1f}"
    return f"ours {size}σ {'higher' if higher else 'lower'} ({'better' if higher == higher_is_better else 'worse'})"


def compare(mean: float, std: float, n: int, paper: Paper | None, higher_is_better: bool, setting: str) -> dict:
    """The :data:`COLUMNS` of one table row (NaN / empty without a published number)."""
    if paper is None:
        return {"paper_mean": np.nan, "paper_std": np.nan, "paper_n": np.nan, "paper_row": "",
                "diff_vs_paper": np.nan, "z_vs_paper": np.nan, "verdict": "", "setting": ""}
    diff = mean - paper.mean
    z = z_score(diff, std, n, paper.std, paper.n)
    return {"paper_mean": paper.mean, "paper_std": np.nan if paper.std is None else paper.std,
            "paper_n": np.nan if paper.n is None else paper.n, "paper_row": paper.row, "diff_vs_paper": diff,
            "z_vs_paper": z, "verdict": verdict(z, higher_is_better), "setting": setting}


def markdown_cells(row, decimals: int) -> tuple[str, str]:
    """("Paper", "vs paper") Markdown cells of a row holding the :data:`COLUMNS`; "–" without a match, and "vs
    paper" "–" without our number (every run diverged). A reduced setting is marked †."""
    if pd.isna(row["paper_mean"]):
        return "–", "–"
    paper = f"{row['paper_mean']:.{decimals}f}"
    if not pd.isna(row["paper_std"]):
        paper += f" ± {row['paper_std']:.{decimals}f}"
    if pd.isna(row["diff_vs_paper"]):
        return paper, "–"
    versus = f"{row['diff_vs_paper']:+.{decimals}f}"
    if not pd.isna(row["z_vs_paper"]):
        verdict = row["verdict"].replace("|", "\\|")  # "|z| ≤ 2" inside a pipe-table cell: Markdown's escape
        versus += f", z = {row['z_vs_paper']:+.1f}: {verdict}"
    if row["setting"] != PUBLISHED:
        versus += " †"
    return paper, versus


def markdown_note(table: pd.DataFrame, label_column: str = "model") -> str:
    """The footnote of a table's † rows: which settings differ from the paper's."""
    reduced = [f"{r[label_column]}: {r['setting']}" for _, r in table.iterrows()
               if isinstance(r["setting"], str) and r["setting"] not in ("", PUBLISHED)]
    text = ("Paper / vs paper: the published number of the same experiment, ours − paper and z = difference / its "
            "standard error (|z| ≤ 2: consistent).")
    if reduced:
        text += " † not like-for-like — " + "; ".join(reduced) + "."
    return text + "\n"


def setting_text(differences: list[str]) -> str:
    """The ``setting`` cell: "published" without differences, else "reduced: " and the differences."""
    return PUBLISHED if not differences else "reduced: " + ", ".join(differences)


# ---------------------------------------------------------------------------------------------- settings


def _equal(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=0.0)
    return a == b


def config_differences(config: dict, reference: dict, ignore: tuple[str, ...] = ("seed",)) -> list[str]:
    """"key value (paper value)" for every key of ``reference`` that ``config`` sets differently, and "key value
    (added)" for keys only ``config`` has."""
    out = [f"{k} {config[k]} (paper {reference[k]})" for k in reference
           if k not in ignore and k in config and not _equal(config[k], reference[k])]
    out += [f"{k} {config[k]} (added)" for k in config if k not in ignore and k not in reference]
    return out


SIZE_KEYS = ("num_train", "num_val", "num_test", "subset", "copies_per_class", "train_graphs_per_size",
             "val_graphs_per_size", "test_graphs_per_size", "num_graphs")
IGNORED_DATA_KEYS = ("mirror", "sha256", "workers", "name", "features", "variant")


def data_differences(meta, allowed: dict | None = None) -> list[str]:
    """What of the dataset differs from the paper's data: its generator parameters (``meta.source.params``) against
    the generator's defaults. Size parameters are summarised as "N of M graphs" (M from the generator's description
    of its defaults); ``allowed`` maps a parameter to values that are the paper's too (CYCLES' training sizes)."""
    source = meta.source or {}
    generator = get_generator(source["generator"])
    params = source.get("params", {})
    allowed = allowed or {}
    changed = [k for k, v in params.items() if k in generator.defaults and k not in IGNORED_DATA_KEYS
               and not _equal(v, generator.defaults[k]) and v not in allowed.get(k, ())]
    out = [f"dataset {k} {params[k]} (paper {generator.defaults[k]})" for k in changed if k not in SIZE_KEYS]
    if any(k in SIZE_KEYS for k in changed):
        paper_params = {**params, **{k: generator.defaults[k] for k in changed if k in SIZE_KEYS}}
        paper = generator.describe(meta.name, resolve_params(generator, paper_params, "published data"),
                                   source.get("seed", 0))
        out.insert(0, f"{meta.num_graphs:,} of {paper.num_graphs:,} graphs")
    return out


def runs_difference(n_ours: int, n_paper: int | None, what: str = "runs") -> list[str]:
    """["N of M runs"] when we have fewer runs than the paper (``what`` names them), else []."""
    return [f"{n_ours:,} of {n_paper:,} {what}"] if n_paper and n_ours < n_paper else []


# ---------------------------------------------------------------------------------------------- P1


P1_GENERATORS = {"sbm_pattern": "PATTERN", "sbm_cluster": "CLUSTER", "tsp": "TSP", "csl": "CSL", "cycles": "CYCLES",
                 "cycles_release": "CYCLES", "graph_theory_prop": "GraphTheoryProp", "superpixels_mnist": "MNIST",
                 "superpixels_cifar10": "CIFAR10", "aqsol": "AQSOL", "wikics": "WikiCS",
                 "ogbl_collab": "OGBL-COLLAB"}
P1_TU = {"ENZYMES": "TU/ENZYMES", "DD": "TU/DD", "PROTEINS_full": "TU/PROTEINS", "PROTEINS": "TU/PROTEINS"}
# the presets' dataset names that differ from the published tables' keys
P1_PRESET_DATASETS = {"SBM_PATTERN": "PATTERN", "SBM_CLUSTER": "CLUSTER", **P1_TU}
P1_RUNS = {"CSL": 100, "WikiCS": 80}  # per table: runs behind a published number (default 4 seeds; TU see below)
P1_DEFAULT_RUNS, P1_TU_RUNS = 4, 20
P1_FAMILIES = {"MF": "Matrix Fact.", "k-NN heuristic": "k-NN Heuristic"}
MP_GCNS = ("GCN", "GraphSAGE", "MoNet", "GAT", "GatedGCN", "GIN")  # CSL's "All MP-GCNs" row (no PE; not MLP)


def benchmarking_gnns_key(meta) -> str | None:
    """The published table of a dataset (e.g. "ZINC", "TU/DD") from its meta.json source; None: not the paper's."""
    source = meta.source or {}
    generator, params = source.get("generator"), source.get("params", {})
    if generator in P1_GENERATORS:
        return P1_GENERATORS[generator]
    if generator == "zinc":
        return "ZINC" if params.get("subset", True) else None
    if generator == "released":
        return params.get("name") if params.get("name") in load(DWIVEDI2020)["tables"] else None
    if generator == "tu" and params.get("variant") == DWIVEDI2020:
        return P1_TU.get(params.get("name"))
    return None


def _suffixes(name: str) -> tuple[str, frozenset]:
    """("GatedGCN", {"E", "PE"}) for "GatedGCN-E-PE" (only the suffixes -E and -PE are flags: "k-NN Heuristic" is
    one name)."""
    parts, flags = name.split("-"), set()
    while len(parts) > 1 and parts[-1] in ("E", "PE"):
        flags.add(parts.pop())
    return "-".join(parts), frozenset(flags)


def _p1_rows(key: str, train_size: int | None) -> list[dict]:
    """Rows of a published P1 table with a number: name, family, flags, params, Paper."""
    tables = load(DWIVEDI2020)["tables"]
    if key.startswith("TU/"):
        rows = []
        for r in tables["TU"]["datasets"][key[3:]]:
            if "seed1" not in r:
                continue
            # the two seeds' 10-fold results pooled: mean of the means, population std of the 20 runs
            (m1, s1), (m2, s2) = r["seed1"]["test"], r["seed2"]["test"]
            mean = (m1 + m2) / 2
            std = math.sqrt((s1**2 + s2**2) / 2 + ((m1 - m2) / 2) ** 2)
            rows.append({**r, "test": [mean, std], "n": P1_TU_RUNS,
                         "label": f"Table 16 {key[3:]} {r['model']} (seeds 1 and 2 pooled)"})
        table = tables["TU"]
    else:
        table, rows = tables[key], []
        for r in table["rows"]:
            if "test_by_train_samples" in r:
                test = r["test_by_train_samples"].get(train_size)
                if test is None:
                    continue
                r = {**r, "test": test, "label": f"{table['table']} {r['model']} ({train_size} training graphs)"}
            elif "test_average" in r:
                r = {**r, "test": r["test_average"]}
            if "test" not in r:
                continue  # OOM / Diverged
            rows.append({**r, "n": P1_RUNS.get(key, P1_DEFAULT_RUNS)})
    out = []
    for r in rows:
        base, flags = _suffixes(r["model"])
        if r.get("section") == "with_LapPE":
            flags = flags | {"PE"}
        params = r.get("params")
        mean, std = r["test"]
        label = r.get("label") or (f"{table['table']} {r['model']}" + (f" L={r['L']}" if r.get("L") else "")
                                   + (f", {params:,} params" if isinstance(params, int) else ""))
        out.append({"family": base, "flags": flags, "params": params, "section": r.get("section"),
                    "paper": Paper(float(mean), None if std is None else float(std), r["n"], label,
                                   params if isinstance(params, int) else None)})
    return out


def preset_total(preset: str | None, config: dict, key: str) -> int | None:
    """The published parameter total of the preset's variant the run config is (its ``runs`` entry whose ``set``
    the config satisfies, most specific first, else the preset's ``total_params``) — only for a preset of this
    dataset."""
    if preset is None:
        return None

    entry = all_presets().get(preset)
    if entry is None or P1_PRESET_DATASETS.get(entry.get("dataset"), entry.get("dataset")) != key:
        return None
    variants = sorted((v for v in _runs(entry) if "total_params" in v
                       and all(_equal(config.get(k), val) for k, val in (v.get("set") or {}).items())),
                      key=lambda v: -len(v.get("set") or {}))
    return variants[0]["total_params"] if variants else entry.get("total_params")


def _runs(entry: dict) -> list[dict]:
    """A preset's ``runs`` records; none for presets no script of the original ran (``runs`` is then a note)."""
    runs = entry.get("runs")
    return runs if isinstance(runs, list) else []


def preset_reference(preset: str, config: dict) -> dict:
    """The preset's run config with the ``set`` of the ``runs`` variant the run config satisfies (most specific)."""
    reference = run_config(preset)
    variants = sorted((v.get("set") or {} for v in _runs(all_presets()[preset])
                       if all(_equal(config.get(k), val) for k, val in (v.get("set") or {}).items())),
                      key=len, reverse=True)
    return {**reference, **(variants[0] if variants else {})}


def same_network(config: dict | None, variant: str) -> bool:
    """Whether a run config is the paper's own network (variant ``variant`` of :mod:`gnnbench.models.registry`): a
    paper's number sits beside its own networks only, not beside another paper's layer of the same family name
    (Errica et al.'s GIN run under the benchmark's protocol is not the benchmark's GIN)."""
    return (config or {}).get("variant", variant) == variant


def match_benchmarking_gnns(meta, architecture: str, config: dict, num_params: int,
                            preset: str | None = None) -> Paper | None:
    """The published P1 number of a model on a dataset (module docstring: the matching rule), or None."""
    key = benchmarking_gnns_key(meta)
    if key is None or not same_network(config, DWIVEDI2020):
        return None
    train_size = (meta.split_sizes or {}).get("train")
    family = P1_FAMILIES.get(architecture, architecture)
    ours = frozenset(f for f, on in (("E", config.get("edge_feat")), ("PE", config.get("pos_enc"))) if on)
    totals = {num_params, preset_total(preset, config, key)} - {None}
    candidates = []
    for row in _p1_rows(key, train_size):
        if row["family"] == "All MP-GCNs" and row["section"] == "no_PE":  # CSL "All MP-GCNs": any MP-GCN without PE
            if family in MP_GCNS and "PE" not in ours:
                candidates.append(row)
        elif row["family"].lower() == family.lower() and (row["params"] is None or row["params"] in totals):
            candidates.append(row)
    if len(candidates) > 1:
        candidates = [r for r in candidates if r["flags"] == ours] or candidates
    return candidates[0]["paper"] if len(candidates) == 1 else None


def benchmarking_gnns_setting(meta, config: dict, preset: str | None, runs: int, paper: Paper,
                              num_params: int | None = None) -> str:
    """The setting cell of a benchmarking-gnns row: the data's generator parameters against the paper's (every training
    size of the CYCLES table counts as the paper's), the run config against the preset's
    (:func:`preset_reference`), a parameter count other than the printed one, and fewer runs than the paper's."""
    key = benchmarking_gnns_key(meta)
    allowed = {}
    if key == "CYCLES":  # every training size of Table 11 is the paper's
        row = load(DWIVEDI2020)["tables"]["CYCLES"]["rows"][0]
        allowed = {"num_train": tuple(row["test_by_train_samples"])}
    differences = data_differences(meta, allowed)
    if preset is None:
        if "model" in config:  # a trained model (a baseline such as TSP's k-NN heuristic has no training settings)
            differences.append("no preset to check the training settings against")
    else:
        differences += config_differences(config, preset_reference(preset, config))
    if num_params is not None and paper.params is not None and num_params != paper.params:
        differences.append(f"{num_params:,} parameters (paper {paper.params:,})")
    return setting_text(differences + runs_difference(runs, paper.n))


# ---------------------------------------------------------------------------------------------- P2


P2_NAMES = {"cora": "CORA", "citeseer": "CiteSeer", "pubmed": "PubMed", "cora_full": "CORA-Full",
            "coauthor_cs": "Coauthor-CS", "coauthor_physics": "Coauthor-Physics",
            "amazon_computers": "Amazon-Computers", "amazon_photo": "Amazon-Photo"}
P2_TABLE2B = {"given": "planetoid_split", "random_sizes": "another_random_split"}
# 20 training and 30 validation nodes per class (Shchur et al.; the released code (shchur/gnn-benchmark)
# config/train.conf.yaml: train_examples_per_class, val_examples_per_class)
P2_SPLIT = {"train_per_class": 20, "val_per_class": 30}
# the suites' drop_classes_up_to per dataset: CORA-Full drops its classes of at most 50 nodes (the released code
# (shchur/gnn-benchmark) gnnbench/data/make_dataset.py, get_dataset; the paper ignores "3 classes with less than
# 50 nodes")
P2_DROP_CLASSES = {"cora_full": 50}


def pitfalls_key(meta, split_scheme: str) -> tuple[str, str] | None:
    """(table, dataset) of P2's published numbers for a dataset and split scheme, from its meta.json source:
    ("table1", "CORA"), ("planetoid_split", "PubMed"), ...; None: not the paper's."""
    source = meta.source or {}
    generator, params = source.get("generator"), source.get("params", {})
    name = P2_NAMES.get(params.get("name"))
    if generator not in ("npz", "planetoid") or name is None:
        return None
    if params.get("standardize", True):
        return ("table1", name) if split_scheme == "random_per_class" else None
    if generator == "planetoid" and split_scheme in P2_TABLE2B:
        return P2_TABLE2B[split_scheme], name
    return None


def pitfalls_family(config: dict) -> str:
    """The paper's row name of a run config: GCN, GAT, MoNet, GS-mean, ..., LabelProp, LabelProp NL."""
    model = config.get("model")
    if model == "GraphSAGE":
        return f"GS-{config.get('aggregator', 'mean')}"
    if model == "LabelProp":
        return "LabelProp NL" if config.get("prop_type") == "smoothed" else "LabelProp"
    return model


def match_pitfalls(meta, split_scheme: str, config: dict) -> Paper | None:
    """The published P2 number (Table 1 or 2b) of a model on a dataset and split scheme (module docstring), or
    None (not the paper's dataset or network, or a cell printed as N/A)."""
    key = pitfalls_key(meta, split_scheme)
    if key is None or not same_network(config, SHCHUR2018):
        return None
    table, dataset = key
    section = load(SHCHUR2018)[table]
    family = pitfalls_family(config)
    value = section["rows"].get(family, {}).get(dataset)
    if not isinstance(value, list):
        return None  # N/A or not printed
    n = section.get("runs")
    if isinstance(n, dict):
        n = n.get(family, n.get("default"))
    return Paper(float(value[0]), float(value[1]), n, f"{section['table']} {family} on {dataset}")


def pitfalls_setting(meta, split: dict, config: dict, preset: str | None, runs: int, paper: Paper,
                     training_defaults: dict | None = None) -> str:
    """The setting cell of a pitfalls row; ``training_defaults``: the protocol's training procedure, which the
    preset's config is checked with (the protocol passes it: reporting does not import the protocols)."""
    params = (meta.source or {}).get("params", {})
    differences = []
    drop = P2_DROP_CLASSES.get(params.get("name"), 0)
    if params.get("standardize", True) and params.get("drop_classes_up_to", 0) != drop:
        differences.append(f"dataset drop_classes_up_to {params.get('drop_classes_up_to', 0)} (paper {drop})")
    if split.get("scheme") == "random_per_class":
        differences += [f"split {k} {split.get(k)} (paper {v})" for k, v in P2_SPLIT.items() if split.get(k) != v]
    if preset is None:
        differences.append("no preset to check the training settings against")
    else:
        differences += config_differences(config, {**(training_defaults or {}), **run_config(preset)})
    return setting_text(differences + runs_difference(runs, paper.n))


# ---------------------------------------------------------------------------------------------- P3


P3_FAMILIES = {"MolecularFingerprint": "Baseline", "DeepMultisets": "Baseline"}
P3_SOCIAL_VARIANTS = ("constant", "degree")
P3_FOLDS, P3_FINAL_RUNS = 10, 3
# keys of a fair-comparison config that are training settings (checked against the preset's fixed values)
P3_TRAINING_KEYS = ("epochs", "patience", "time_limit_hours", "optimizer", "scheduler", "scheduler_step_size",
                    "scheduler_gamma", "gradient_clipping", "l2")


def fair_comparison() -> dict:
    """Errica et al.'s Tables 3 and 4: key → model family → [mean, std] or "OOR"."""
    return load(ERRICA2020)


def fair_comparison_key(meta) -> str | None:
    """The published-table key of a dataset (TU name, plus /constant or /degree for the social sets), from the
    source recorded in its meta.json; None for datasets the paper did not use."""
    source = meta.source or {}
    if source.get("generator") != "tu":
        return None
    name = source.get("params", {}).get("name")
    name = "PROTEINS" if name == "PROTEINS_full" else name
    features = source.get("features")
    key = f"{name}/{features}" if features in P3_SOCIAL_VARIANTS else name
    # Errica et al. ran the chemical sets with one-hot node labels only (ENZYMES: labels and its 18 attributes;
    # diningphil/gnn-comparison PrepareDatasets.py): other feature variants are not the paper's experiment
    chemical_ok = features == ("labels_and_attributes" if name == "ENZYMES" else "labels")
    return key if key in fair_comparison() and ("/" in key or chemical_ok) else None


def fair_comparison_value(meta, architecture: str):
    """[mean, std], "OOR", or None (no published number for this dataset / model)."""
    key = fair_comparison_key(meta)
    if key is None:
        return None
    return fair_comparison()[key].get(P3_FAMILIES.get(architecture, architecture))


def match_fair_comparison(meta, architecture: str, config: dict | None = None) -> Paper | None:
    """The published P3 number (Table 3 or 4, over 10 outer folds) of a model family on a dataset, or None (not
    the paper's dataset or network, or out of resources)."""
    value = fair_comparison_value(meta, architecture)
    if not isinstance(value, list) or not same_network(config, ERRICA2020):
        return None
    family = P3_FAMILIES.get(architecture, architecture)
    return Paper(float(value[0]), float(value[1]), P3_FOLDS, f"Errica et al. {family} on {fair_comparison_key(meta)}")


def fair_comparison_setting(chosen_configs: list[dict], preset: str | None, folds: int, final_runs: int) -> str:
    """Outer folds and final runs per fold against the paper's 10 and 3, and the training settings of the selected
    configurations against the preset's fixed values."""
    differences = runs_difference(folds, P3_FOLDS, "outer folds")
    if final_runs < P3_FINAL_RUNS:
        differences.append(f"{final_runs} of {P3_FINAL_RUNS} final runs per fold")
    if preset is None:
        differences.append("no preset to check the training settings against")
    else:
        fixed = {k: v for k, v in (all_presets()[preset].get("params") or {}).items() if k in P3_TRAINING_KEYS}
        seen = []
        for config in chosen_configs:
            seen += [d for d in config_differences({k: config[k] for k in fixed if k in config}, fixed)
                     if d not in seen]
        differences += seen
    return setting_text(differences)
