"""Write the suites of "Benchmarking Graph Neural Networks" from the published configs.

    python tools/paper_suites.py            # rewrites config/suites/benchmarking-gnns*.yaml

Every benchmarking-gnns preset (``gnnbench/config/presets/*.yaml``) says how the original scripts launched it:
``runs`` — CLI overrides (``set``) and the seeds. Each (preset, ``set``) becomes one model of the suite, with those
seeds; a preset "not run by any script" is left out. Labels are the preset name without its file's prefix
(``molecules_graph_regression_GatedGCN_ZINC_100k`` → ``GatedGCN_ZINC_100k``), with the overrides appended
(``+E`` for ``edge_feat: true``, the paper's "-E" rows; ``+h181`` for a hidden width; ``+lr1e-05`` for a learning
rate). CYCLES' ``num_train_data`` selects the training-set size, a property of the dataset: one dataset per size
(``CYCLES_200`` ... ``CYCLES_5000``, the first N training graphs of the release).

Three suites: the whole paper, the positional-encoding study (every PE config beside its config without PE) and
the 500k scaling study (every 500k config beside its 100k config).
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import yaml

from gnnbench.papers import DWIVEDI2020  # the paper's key: names its released splits and TU loader

ROOT = Path(__file__).resolve().parents[1]
PRESETS = ROOT / "gnnbench" / "config" / "presets"
SUITES = ROOT / "config" / "suites"

# the published graphs wherever the original generation cannot be repeated (unseeded SBMs, numpy-dependent
# superpixel edges, Concorde tours, relabelled CSL), the released files or the real sources elsewhere
BENCHMARK_FOLDS = {"scheme": "published", "source": DWIVEDI2020}
DATASETS = {
    "ZINC": {"generator": "zinc"},
    "AQSOL": {"generator": "aqsol"},
    "SBM_PATTERN": {"generator": "released", "params": {"name": "PATTERN"}},
    "SBM_CLUSTER": {"generator": "released", "params": {"name": "CLUSTER"}},
    "MNIST": {"generator": "released", "params": {"name": "MNIST"}},
    "CIFAR10": {"generator": "released", "params": {"name": "CIFAR10"}},
    "TSP": {"generator": "released", "params": {"name": "TSP"}},
    "CSL": {"generator": "released", "params": {"name": "CSL"}, "split": BENCHMARK_FOLDS},
    "GraphTheoryProp": {"generator": "graph_theory_prop", "seed": 1234},  # PNA's seed: its released graphs
    "ENZYMES": {"generator": "tu", "params": {"name": "ENZYMES", "variant": DWIVEDI2020},
                "split": BENCHMARK_FOLDS},
    "DD": {"generator": "tu", "params": {"name": "DD", "variant": DWIVEDI2020}, "split": BENCHMARK_FOLDS},
    "PROTEINS_full": {"generator": "tu", "params": {"name": "PROTEINS_full", "variant": DWIVEDI2020},
                      "split": BENCHMARK_FOLDS},
    "WikiCS": {"generator": "wikics"},
    "OGBL-COLLAB": {"generator": "ogbl_collab"},
}
CYCLES_SIZES = (200, 500, 1000, 5000)
for size in CYCLES_SIZES:
    DATASETS[f"CYCLES_{size}"] = {"generator": "cycles_release", "params": {"num_train": size}}
ABBREVIATIONS = {"hidden_dim": "h", "init_lr": "lr"}

HEADER = """\
# "Benchmarking Graph Neural Networks" (Dwivedi et al.): {what}
# Written by tools/paper_suites.py from the published configs (gnnbench/config/presets/); do not edit by hand.
#   snakemake --cores N --configfile config/suites/{name}.yaml                       (this machine)
#   snakemake --profile workflow/profiles/slurm --configfile config/suites/{name}.yaml   (a SLURM cluster)
# Every model is a published config run the way the original scripts ran it: their CLI overrides ("+E" =
# edge_feat true, "+hN" = hidden_dim N, "+lrX" = init_lr X) and their seeds; TU sets on the benchmark's 10 folds,
# CSL on its 5 folds, WikiCS on its 20 splits. Tables: results/tables/{{dataset}}.md, one row per model.
# Size: {runs} training runs. What it costs: docs/protocols/benchmarking-gnns.md#reproducing-the-papers-tables
"""


def load_presets() -> dict[str, tuple[str, dict]]:
    """preset name → (its file's prefix, entry), benchmarking-gnns presets only."""
    out = {}
    for path in sorted(PRESETS.glob("*.yaml")):
        for name, entry in (yaml.safe_load(path.read_text()) or {}).items():
            if isinstance(entry, dict) and "protocol" not in entry:
                out[name] = (path.stem + "_", entry)
    return out


def variant_label(base: str, overrides: dict) -> str:
    """A model's label in the suite: the preset's short name with its overrides appended (``+E``/``+noE`` for
    ``edge_feat``, ``+h181`` for ``hidden_dim``, ``+lr1e-05`` for ``init_lr``, ``+<key><value>`` otherwise)."""
    parts = []
    for key, value in overrides.items():
        if key == "edge_feat":
            parts.append("E" if value else "noE")
        else:
            parts.append(f"{ABBREVIATIONS.get(key, key)}{value}")
    return base + "".join(f"+{p}" for p in parts)


def paper_models(presets: dict) -> dict[str, dict[str, dict]]:
    """dataset → label → model entry ({preset, set, seeds}) for every (preset, set) the scripts ran."""
    out: dict[str, dict[str, dict]] = {}
    for name, (prefix, entry) in presets.items():
        runs = entry.get("runs")
        if not isinstance(runs, list):  # "not run by any script"
            continue
        for run in runs:
            overrides = dict(run.get("set") or {})
            dataset = entry["dataset"]
            if dataset == "CYCLES":
                dataset = f"CYCLES_{overrides.pop('num_train_data')}"
            label = variant_label(name.removeprefix(prefix), overrides)
            model = {"preset": name, **({"set": overrides} if overrides else {}), "seeds": list(run["seeds"])}
            out.setdefault(dataset, {})[label] = model
    return out


def suite(models: dict[str, dict[str, dict]]) -> dict:
    """The suite file's content for ``models`` (dataset → label → model entry): the paper-scale ``resources``, the
    datasets in the paper's order and one benchmark per dataset."""
    names = [name for name in DATASETS if name in models]  # the paper's order
    return {
        "resources": {"train": {"cpus": 4, "mem_mb": 32000, "runtime": 1500, "gpus": 1},
                      "dataset": {"cpus": 4, "mem_mb": 64000, "runtime": 720}},
        "datasets": {name: copy.deepcopy(DATASETS[name]) for name in names},  # copies: no YAML aliases
        "benchmarks": {name: {"models": models[name]} for name in names},
    }


def folds(dataset: str) -> int:
    """How many folds or splits each seed of ``dataset`` runs on: CSL 5, the TU sets 10, WikiCS 20, the others 1."""
    split = DATASETS[dataset].get("split", {})
    if dataset == "WikiCS":
        return 20
    return {"CSL": 5}.get(dataset, 10) if split.get("scheme") == "published" else 1


def count_runs(models: dict[str, dict[str, dict]]) -> int:
    """The number of training runs ``models`` plans: seeds × folds, summed over every model."""
    return sum(len(m["seeds"]) * folds(d) for d, labels in models.items() for m in labels.values())


def subset(models: dict, keep) -> dict:
    """The models for which ``keep(preset name, the dataset's models)`` is true; datasets left without a model are
    dropped."""
    out = {}
    for dataset, labels in models.items():
        chosen = {label: m for label, m in labels.items() if keep(m["preset"], labels)}
        if chosen:
            out[dataset] = chosen
    return out


def write(name: str, what: str, models: dict) -> None:
    """Write ``config/suites/<name>.yaml``: the header (``what`` it reproduces, its run count) and the suite of
    ``models``."""
    text = HEADER.format(what=what, name=name, runs=f"{count_runs(models):,}")
    text += yaml.safe_dump(suite(models), sort_keys=False, width=120, default_flow_style=None)
    (SUITES / f"{name}.yaml").write_text(text)


def main() -> int:
    """Rewrite the three suites: the whole paper, the positional-encoding study and the 500k study."""
    presets = load_presets()
    models = paper_models(presets)
    presets_run = {m["preset"] for labels in models.values() for m in labels.values()}
    write("benchmarking-gnns", "every table of the paper", models)
    pe = {p for p in presets_run if "_PE_" in p}
    write("benchmarking-gnns-pe", "the positional-encoding study (every PE config beside the same config "
          "without PE)", subset(models, lambda p, _: p in pe or p in {q.replace("_PE_", "_", 1) for q in pe}))
    large = {p for p in presets_run if p.endswith("_500k")}
    write("benchmarking-gnns-500k", "the 500k-parameter scaling study (every 500k config beside its 100k "
          "config)", subset(models, lambda p, _: p in large or any(
              q.replace("_L8_500k", "_100k").replace("_PE_500k", "_100k").replace("_500k", "_100k") == p
              for q in large)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
