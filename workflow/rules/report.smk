"""Tables (one row per fit, summaries over replicates) and the figures of the papers."""


localrules:
    aggregate,
    summarize,
    claims,
    figure,


rule aggregate:
    input:
        lambda w: fit_paths(w.exp, fit_file("metrics", "json")),
    output:
        report(
            f"{R}/{{exp}}/tables/fits.csv",
            caption="../report/fits.rst",
            category="Tables",
            labels={"experiment": "{exp}", "table": "one row per fit"},
        ),
    log:
        f"{R}/logs/aggregate/{{exp}}.log",
    benchmark:
        f"{R}/benchmarks/aggregate/{{exp}}.tsv"
    conda:
        "../../envs/lppf.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "../scripts/aggregate.py"


rule summarize:
    input:
        [f"{R}/{exp}/tables/fits.csv" for exp in enabled()],
    output:
        fits=f"{R}/tables/fits.csv",
        csv=f"{R}/tables/summary.csv",
        md=report(
            f"{R}/tables/summary.md",
            caption="../report/summary.rst",
            category="Tables",
            labels={"experiment": "all", "table": "mean and sd over replicates"},
        ),
    log:
        f"{R}/logs/summarize.log",
    benchmark:
        f"{R}/benchmarks/summarize.tsv"
    conda:
        "../../envs/lppf.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "../scripts/summarize.py"


rule claims:
    input:
        f"{R}/tables/fits.csv",
    output:
        csv=f"{R}/tables/claims.csv",
        findings=f"{R}/tables/findings.csv",
        md=report(
            f"{R}/tables/claims.md",
            caption="../report/claims.rst",
            category="Claims",
            labels={"experiment": "all", "table": "claims scorecard"},
        ),
    log:
        f"{R}/logs/claims.log",
    conda:
        "../../envs/lppf.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "../scripts/claims.py"


rule figure:
    input:
        unpack(get_figure_inputs),
    output:
        png=report(
            f"{R}/{{exp}}/figures/{{name}}.png",
            caption="../report/figure.rst",
            category="Figures",
            labels={"experiment": "{exp}", "figure": "{name}"},
        ),
        pdf=f"{R}/{{exp}}/figures/{{name}}.pdf",
    log:
        f"{R}/logs/figure/{{exp}}/{{name}}.log",
    benchmark:
        f"{R}/benchmarks/figure/{{exp}}/{{name}}.tsv"
    conda:
        "../../envs/lppf.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        mcmc=lambda w: figure_settings(w.exp),
        fits=lambda w: figure_fits(w),
    script:
        "../scripts/figures.py"
