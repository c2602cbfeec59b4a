from snakemake.utils import validate


validate(config, "../schemas/config.schema.yaml")


def get_final_output():
    return [f"{config['results']}/demo/privatized.npz"]


rule demo_counts:
    output:
        f"{config['results']}/demo/counts.npz",
    log:
        "logs/demo_counts.log",
    benchmark:
        "benchmarks/demo_counts.tsv"
    conda:
        "../../envs/lppf.yaml"
    shell:
        "python -c \"import numpy as np; np.savez('{output}', Y=np.random.default_rng(0).poisson(2.0, (20, 30)))\" > {log} 2>&1"


rule demo_privatize:
    input:
        f"{config['results']}/demo/counts.npz",
    output:
        f"{config['results']}/demo/privatized.npz",
    log:
        "logs/demo_privatize.log",
    benchmark:
        "benchmarks/demo_privatize.tsv"
    conda:
        "../../envs/lppf.yaml"
    shell:
        "lppf privatize {input} {output} --alpha 0.5 --seed 1 > {log} 2>&1"
