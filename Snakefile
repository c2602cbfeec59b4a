# lppf: reproduction of Schein et al. (ICML 2019) and locally private CAVI.
# A table of contents: the rules live in workflow/rules/*.smk.
from snakemake.utils import min_version

min_version("8.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"


rule all:
    input:
        get_final_output(),
    default_target: True
