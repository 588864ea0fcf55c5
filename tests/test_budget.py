"""Automatic parameter budgets: every published model/dataset pair at 100k and 500k is fitted within 2% of the
budget and never further from it than the published width."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gnnbench.config.budget import base_preset, fit_budget
from gnnbench.config.presets import all_presets, run_config
from gnnbench.data.catalog import describe_dataset
from gnnbench.errors import ConfigError
from gnnbench.models.build import build_model, count_parameters


def _budget_presets() -> list[tuple[str, int]]:
    """Every published config of a 100k or 500k budget (the plain, PE and L8 ones; not the edge analyses)."""
    out = []
    for name in all_presets():
        for tag, budget in (("100k", 100_000), ("500k", 500_000)):
            if name.endswith(tag) and not any(v in name for v in ("edgefeat", "edgereprfeat", "isotropic")):
                out.append((name, budget))
    return out


CASES = _budget_presets()


def test_every_budget_config_is_covered():
    assert len(CASES) >= 150
    assert {all_presets()[n]["model"] for n, _ in CASES} == {
        "MLP", "GCN", "GraphSAGE", "GAT", "MoNet", "GIN", "GatedGCN", "RingGNN", "3WLGNN"}


# Where no width lands within 2%: RingGNN has no out_dim to fine-tune and one unit of width moves its count by
# 3-6% of the budget; the multitask GatedGCN ignores out_dim (as the original) and its widths 39/40 give -2.6% /
# +2.1%. For these the fit must still be the closest width (checked against both neighbours).
COARSE = {"GraphTheoryProp_multitask_GatedGCN_PE_GraphTheoryProp_100k", "SBMs_node_clustering_RingGNN_CLUSTER_L8_500k",
          "TSP_edge_classification_RingGNN_100k", "TUs_graph_classification_RingGNN_DD_100k",
          "molecules_graph_regression_RingGNN_ZINC_100k", "superpixels_graph_classification_RingGNN_CIFAR10_L8_500k"}


@pytest.mark.parametrize(("preset", "budget"), CASES, ids=[n for n, _ in CASES])
def test_fit_is_within_two_percent_and_no_worse_than_the_published_width(preset, budget):
    config = run_config(preset)
    meta = describe_dataset(all_presets()[preset]["dataset"])
    published = count_parameters(build_model(config, meta))
    fit = fit_budget(config, meta, budget)
    assert fit.config["L"] == config["L"]
    assert abs(fit.total_params - budget) <= abs(published - budget), (fit.hidden_dim, config["hidden_dim"])
    assert count_parameters(build_model(fit.config, meta)) == fit.total_params
    if preset in COARSE:
        assert fit.relative_error > 0.02
        for width in (fit.hidden_dim - 1, fit.hidden_dim + 1):
            other = {**fit.config, "hidden_dim": width, **({"out_dim": width} if "out_dim" in config else {})}
            assert abs(count_parameters(build_model(other, meta)) - budget) > abs(fit.total_params - budget)
    else:
        assert fit.relative_error <= 0.02, (fit.hidden_dim, fit.out_dim, fit.total_params)
    tied = fit.hidden_dim * config.get("n_heads", 1) if config["model"] == "GAT" else fit.hidden_dim
    if fit.out_dim is not None and fit.out_dim != tied:  # fine-tuned only when no tied width is within 2%
        tied_config = {**fit.config, "out_dim": tied}
        assert abs(count_parameters(build_model(tied_config, meta)) - budget) > 0.02 * budget


def test_fit_budget_command_prints_width_and_count():
    out = subprocess.run([sys.executable, "-m", "gnnbench.cli", "fit-budget", "--dataset", "ZINC", "--model", "GCN",
                          "--layers", "4", "--budget", "100000"], capture_output=True, text=True, check=True)
    width, total = map(int, out.stdout.split())
    config = {**run_config("molecules_graph_regression_GCN_ZINC_100k"), "hidden_dim": width, "out_dim": width}
    assert total == count_parameters(build_model(config, describe_dataset("ZINC")))
    for other in (width - 1, width + 1):
        worse = count_parameters(build_model({**config, "hidden_dim": other, "out_dim": other},
                                             describe_dataset("ZINC")))
        assert abs(worse - 100000) >= abs(total - 100000)


def test_fit_budget_fits_a_model_of_your_own_like_a_suites_budget(tmp_path):
    """``--model file.py:Class``: the largest width argument within the budget (the suite's rule for plugins), the
    argument named by ``--set width=...``; ``--layers`` (the zoo's L) is refused for such a model in one line."""
    (tmp_path / "mine.py").write_text(
        "from torch import nn\n"
        "class Wide(nn.Module):\n"
        "    def __init__(self, in_channels, size=8):\n"
        "        super().__init__()\n"
        "        self.lin = nn.Linear(in_channels, size)\n"
        "    def forward(self, x, edge_index):\n"
        "        return self.lin(x)\n")
    command = [sys.executable, "-m", "gnnbench.cli", "fit-budget", "--dataset", "ZINC", "--model", "mine.py:Wide",
               "--budget", "20000"]
    out = subprocess.run([*command, "--set", "width=size", "--set", "in_channels=16"], cwd=tmp_path,
                         capture_output=True, text=True, check=True)
    width, total = map(int, out.stdout.split())
    counts = {w: count_parameters(build_model({"model": str(tmp_path / "mine.py") + ":Wide", "in_channels": 16,
                                               "size": w}, describe_dataset("ZINC"))) for w in (width, width + 1)}
    assert counts[width] == total <= 20000 < counts[width + 1]
    refused = subprocess.run([*command, "--layers", "4"], cwd=tmp_path, capture_output=True, text=True)
    assert refused.returncode == 1 and refused.stderr.strip().startswith("gnnbench: error: fit-budget: --layers")


def test_base_preset_prefers_the_plain_config_of_the_dataset():
    assert base_preset("ZINC", "GatedGCN") == "molecules_graph_regression_GatedGCN_ZINC_100k"
    assert base_preset("SBM_PATTERN", "GatedGCN") == "SBMs_node_clustering_GatedGCN_PATTERN_100k"
    assert base_preset("some-new-dataset", "GIN").startswith("CSL_graph_classification_GIN")  # first by name
    with pytest.raises(ConfigError, match="no published config uses model 'Transformer'"):
        base_preset("ZINC", "Transformer")
