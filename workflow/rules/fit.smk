"""Fits (method x inference x K) and their metrics: one small JSON per fit."""


rule fit:
    input:
        unpack(get_fit_inputs),
    output:
        fit_file("fits", "npz"),
    log:
        fit_record("logs", "fit", "log"),
    benchmark:
        fit_record("benchmarks", "fit", "tsv")
    conda:
        "../envs/lppf.yaml"
    threads: config["threads"]
    resources:
        mem_mb=fit_resources("mem_mb"),
        runtime=fit_resources("runtime"),
    params:
        args=fit_args,
        seed=fit_seed,
    shell:
        "(export NUMBA_NUM_THREADS={threads};"
        " lppf fit {input.data} {output} --model {wildcards.model} --method {wildcards.method}"
        " --inference {wildcards.inference} --components {wildcards.K} {params.args}"
        " --seed {params.seed} --threads {threads} --quiet) > {log} 2>&1"


rule evaluate:
    input:
        unpack(get_evaluate_inputs),
    output:
        fit_file("metrics", "json"),
    log:
        fit_record("logs", "evaluate", "log"),
    benchmark:
        fit_record("benchmarks", "evaluate", "tsv")
    conda:
        "../envs/lppf.yaml"
    threads: 1
    resources:
        mem_mb=grow(2000),
        runtime=10,
    params:
        args=evaluate_args,
        seed=fit_seed,
    shell:
        "lppf evaluate {input.fit} {output} --truth {input.truth} {params.args}"
        " --seed {params.seed} > {log} 2>&1"
