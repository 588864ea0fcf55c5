"""gnnbench workflow: dataset → positional encodings → splits → training runs → tables.

    snakemake --cores 2                                   # the suite in config/config.yaml
    snakemake --cores 2 results/runs/CSL/GCN-PE/seed41/fold0/metrics.json   # one run and what it needs
    snakemake --cores 2 --configfile my_suite.yaml        # another suite
"""

import sys

from snakemake.utils import min_version

from gnnbench.config.suite import load_suite
from gnnbench.errors import GnnbenchError

min_version("9.0")


configfile: "config/config.yaml"


try:
    SUITE = load_suite(config, workflow.source_path("workflow/schemas/config.schema.yaml"))
except GnnbenchError as exc:
    sys.exit(f"gnnbench: error: {exc}")


include: "workflow/rules/common.smk"
include: "workflow/rules/datasets.smk"
include: "workflow/rules/features.smk"
include: "workflow/rules/splits.smk"
include: "workflow/rules/training.smk"
include: "workflow/rules/aggregate.smk"


rule all:
    default_target: True
    input:
        SUITE.table_files(),
