"""Ground truth, noise levels, held-out masks and privatized copies."""


rule truth:
    input:
        get_truth_inputs,
    output:
        TRUTH,
    log:
        f"{R}/logs/truth/{{exp}}/{{setting}}/rep{{rep}}.log",
    benchmark:
        f"{R}/benchmarks/truth/{{exp}}/{{setting}}/rep{{rep}}.tsv"
    conda:
        "../../envs/lppf.yaml"
    threads: 1
    resources:
        mem_mb=grow(2000),
        runtime=10,
    params:
        args=truth_args,
        source=truth_source,
    shell:
        "lppf simulate {params.args} {params.source} {output:q} > {log:q} 2>&1"


rule truth_factor:
    input:
        TRUTH,
    output:
        TRUTH_FACTOR,
    log:
        f"{R}/logs/truth_factor/{{exp}}/{{setting}}/rep{{rep}}.{{factor}}.log",
    benchmark:
        f"{R}/benchmarks/truth_factor/{{exp}}/{{setting}}/rep{{rep}}.{{factor}}.tsv"
    conda:
        "../../envs/lppf.yaml"
    threads: 1
    resources:
        mem_mb=grow(1000),
        runtime=5,
    shell:
        "lppf simulate factor {input:q} {output:q} {wildcards.factor} > {log:q} 2>&1"


rule heldout_mask:
    input:
        get_truth,
    output:
        MASK,
    log:
        f"{R}/logs/heldout_mask/{{exp}}/{{setting}}/rep{{rep}}.log",
    benchmark:
        f"{R}/benchmarks/heldout_mask/{{exp}}/{{setting}}/rep{{rep}}.tsv"
    conda:
        "../../envs/lppf.yaml"
    threads: 1
    resources:
        mem_mb=grow(1000),
        runtime=5,
    params:
        top=lambda w: settings(w.exp)[w.setting]["heldout"],
        fraction=lambda w: EXPERIMENTS[w.exp]["heldout_fraction"],
        seed=lambda w: seed(w.exp, w.setting, w.rep, "mask"),
    shell:
        "lppf simulate mask {input:q} {output:q} --top {params.top} --fraction {params.fraction}"
        " --seed {params.seed} > {log:q} 2>&1"


rule noise_level:
    input:
        get_truth,
    output:
        ALPHA,
    log:
        f"{R}/logs/noise_level/{{exp}}/{{setting}}/{{grid}}/rep{{rep}}.log",
    benchmark:
        f"{R}/benchmarks/noise_level/{{exp}}/{{setting}}/{{grid}}/rep{{rep}}.tsv"
    conda:
        "../../envs/lppf.yaml"
    threads: 1
    resources:
        mem_mb=grow(1000),
        runtime=5,
    params:
        args=noise_level_args,
        seed=lambda w: seed(w.exp, w.setting, w.grid, w.rep, "alpha"),
    shell:
        "lppf simulate noise-level {input:q} {output:q} {params.args} --seed {params.seed}"
        " > {log:q} 2>&1"


rule privatize:
    input:
        truth=get_truth,
        alpha=get_alpha_file,
    output:
        PRIVATIZED,
    log:
        f"{R}/logs/privatize/{{exp}}/{{setting}}/{{grid}}/rep{{rep}}.log",
    benchmark:
        f"{R}/benchmarks/privatize/{{exp}}/{{setting}}/{{grid}}/rep{{rep}}.tsv"
    conda:
        "../../envs/lppf.yaml"
    threads: 1
    resources:
        mem_mb=grow(2000),
        runtime=10,
    params:
        args=privatize_args,
        file=alpha_file_args,
        seed=lambda w: seed(w.exp, w.setting, w.grid, w.rep, "privatize"),
    shell:
        "lppf privatize {input.truth:q} {output:q} {params.args} {params.file}"
        " --seed {params.seed} > {log:q} 2>&1"
