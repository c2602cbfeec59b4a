# lppf: reproduction of Schein et al. (ICML 2019) and locally private CAVI.
# The rules live in workflow/rules/*.smk, the experiment grid in lppf.experiments, the settings
# in config/ (see config/README.md). A config given with --configfile extends this default;
# the configs in config/ and .test/ set every key it sets, so they mean the same alone.
from snakemake.utils import min_version

from lppf._scheduler import coalesce_reevaluation

min_version("8.0")
# one pending wake-up of the job scheduler instead of one more per finished job
# (docs/workflow.md, "Running time")
coalesce_reevaluation()


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/enron.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/fit.smk"
include: "workflow/rules/report.smk"


onsuccess:
    print_claims(f"{R}/tables/claims.csv")


rule all:
    default_target: True
    input:
        get_final_output(),


# Named targets, one per configured experiment (its tables and figures): `snakemake e3`.
for exp in EXPERIMENTS:

    rule:
        name:
            exp
        input:
            experiment_outputs(exp),


# Any other bare name is a target for an experiment that is not configured: refused, one line.
rule unconfigured:
    input:
        refuse_target,
    output:
        "{target}",
    wildcard_constraints:
        target="[a-z][a-z0-9_]*",
