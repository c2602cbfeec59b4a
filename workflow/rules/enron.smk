"""Enron matrices and the non-private reference fits behind the semi-synthetic truths."""


rule enron_synth_maildir:
    output:
        directory(f"{R}/enron/maildir"),
    log:
        f"{R}/logs/enron_synth_maildir.log",
    benchmark:
        f"{R}/benchmarks/enron_synth_maildir.tsv"
    conda:
        "../../envs/lppf.yaml"
    threads: 1
    resources:
        mem_mb=grow(1000),
        runtime=10,
    params:
        seed=config["enron"]["synth_seed"],
        args=shell_words(config["enron"]["synth_args"]),
    shell:
        "lppf enron synth-maildir {output:q} --seed {params.seed} {params.args} > {log:q} 2>&1"


# The download needs the network, which compute nodes often lack: it runs on the submit host.
localrules:
    enron_download,


rule enron_download:
    output:
        f"{R}/enron/download/enron_mail.tar.gz",
    log:
        f"{R}/logs/enron_download.log",
    benchmark:
        f"{R}/benchmarks/enron_download.tsv"
    conda:
        "../../envs/lppf.yaml"
    threads: 1
    resources:
        mem_mb=grow(1000),
        runtime=120,
    params:
        url=config["enron"]["source"],
        verify=download_args,
    shell:
        "lppf enron download {params.url:q} {output:q}{params.verify} --quiet > {log:q} 2>&1"


rule enron_dataset:
    input:
        enron_source(),
    output:
        f"{R}/enron/{{dataset}}.npz",
    log:
        f"{R}/logs/enron_dataset/{{dataset}}.log",
    benchmark:
        f"{R}/benchmarks/enron_dataset/{{dataset}}.tsv"
    conda:
        "../../envs/lppf.yaml"
    threads: 1
    resources:
        mem_mb=grow(4000),
        runtime=60,
    params:
        command=lambda w: config["enron"]["datasets"][w.dataset]["command"],
        args=lambda w: shell_words(config["enron"]["datasets"][w.dataset]["args"]),
    shell:
        "lppf enron {params.command} {input:q} {output:q} {params.args} --quiet > {log:q} 2>&1"


rule reference_fit:
    input:
        f"{R}/enron/{{dataset}}.npz",
    output:
        f"{R}/reference/{{dataset}}-{{model}}-K{{K}}.npz",
    log:
        f"{R}/logs/reference_fit/{{dataset}}-{{model}}-K{{K}}.log",
    benchmark:
        f"{R}/benchmarks/reference_fit/{{dataset}}-{{model}}-K{{K}}.tsv"
    conda:
        "../../envs/lppf.yaml"
    threads: config["threads"]
    resources:
        mem_mb=grow(4000),
        runtime=120,
    params:
        inference=config["reference"]["inference"],
        run=grid.reference_args(config),
        seed=lambda w: seed("reference", w.dataset, w.model, w.K),
    shell:
        "(export NUMBA_NUM_THREADS={threads};"
        " lppf fit {input:q} {output:q} --model {wildcards.model} --method nonprivate"
        " --inference {params.inference} --components {wildcards.K} {params.run}"
        " --seed {params.seed} --threads {threads} --quiet) > {log:q} 2>&1"
