# lppf: reproduction of Schein et al. (ICML 2019) and locally private CAVI.
# A table of contents: the rules live in workflow/rules/*.smk, the settings in config/.
from snakemake.utils import min_version

min_version("8.0")


# The offline default, unless other config files are given with --configfile (then only those).
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"



report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/enron.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/fit.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        get_final_output(),
    default_target: True


# Named partial targets: one experiment each (tables and figures).
rule s1:
    input:
        experiment_outputs("s1"),


rule s2:
    input:
        experiment_outputs("s2"),


rule s3:
    input:
        experiment_outputs("s3"),


rule e1:
    input:
        experiment_outputs("e1"),


rule e2:
    input:
        experiment_outputs("e2"),


rule e3:
    input:
        experiment_outputs("e3"),


rule e4:
    input:
        experiment_outputs("e4"),


rule v1:
    input:
        experiment_outputs("v1"),
