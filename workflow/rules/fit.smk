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
        "../../envs/lppf.yaml"
    threads: config["threads"]
    resources:
        mem_mb=fit_resources("mem_mb"),
        runtime=fit_resources("runtime"),
    params:
        args=fit_args,
        files=fit_file_args,
        seed=fit_seed,
    shell:
        "(export NUMBA_NUM_THREADS={threads};"
        " lppf fit {input.data:q} {output:q} --model {wildcards.model} --method {wildcards.method}"
        " --inference {wildcards.inference} --components {wildcards.K} {params.args}"
        " {params.files} --seed {params.seed} --threads {threads} --quiet) > {log:q} 2>&1"


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
        "../../envs/lppf.yaml"
    threads: 1
    resources:
        mem_mb=grow(2000),
        runtime=10,
    params:
        args=evaluate_args,
        files=evaluate_file_args,
        seed=fit_seed,
    shell:
        "lppf evaluate {input.fit:q} {output:q} --truth {input.truth:q} {params.args}"
        " {params.files} --seed {params.seed} > {log:q} 2>&1"
