"""Statistics used across domains: intervals, multiplicity, paired deltas, factorial
estimands and planning (MDE, McNemar sample size).

Formulas cite the seed sections they implement; ``seed_figures`` recomputes
every number the seeds print. The input checks (``check_alpha``, ``check_count``, …) are
the ones every function here runs, so that a front end can refuse a bad value the same way.
"""

from rungbench.stats._checks import check_alpha, check_count, check_positive, check_power
from rungbench.stats.bootstrap import (
    MeanTest,
    bootstrap_pvalue,
    cluster_ratio_draws,
    cluster_tests,
    nan_interval,
)
from rungbench.stats.factorial import (
    FactorialEstimands,
    FactorialIntervals,
    factorial_2x2,
    factorial_2x2_paired,
)
from rungbench.stats.intervals import (
    BinomialIntervals,
    binomial_intervals,
    clopper_pearson,
    proportion_interval,
    wilson,
)
from rungbench.stats.multiplicity import (
    adjust,
    benjamini_hochberg,
    benjamini_hochberg_adjust,
    bonferroni,
    bonferroni_adjust,
    holm,
    holm_adjust,
)
from rungbench.stats.paired import (
    PairedDelta,
    PairedSummary,
    paired_cluster_bootstrap,
    paired_summary,
)
from rungbench.stats.power import (
    McNemarSampleSize,
    MinimumDetectableEffect,
    holm_first_step_alpha,
    mcnemar_power,
    mcnemar_sample_size,
    mde,
)

__all__ = [
    "BinomialIntervals",
    "FactorialEstimands",
    "FactorialIntervals",
    "McNemarSampleSize",
    "MeanTest",
    "MinimumDetectableEffect",
    "PairedDelta",
    "PairedSummary",
    "adjust",
    "benjamini_hochberg",
    "benjamini_hochberg_adjust",
    "binomial_intervals",
    "bonferroni",
    "bonferroni_adjust",
    "bootstrap",
    "bootstrap_pvalue",
    "check_alpha",
    "check_count",
    "check_positive",
    "check_power",
    "clopper_pearson",
    "cluster_ratio_draws",
    "cluster_tests",
    "factorial",
    "factorial_2x2",
    "factorial_2x2_paired",
    "holm",
    "holm_adjust",
    "holm_first_step_alpha",
    "intervals",
    "mcnemar_power",
    "mcnemar_sample_size",
    "mde",
    "nan_interval",
    "paired",
    "paired_cluster_bootstrap",
    "paired_summary",
    "power",
    "proportion_interval",
    "seeds",
    "sums",
    "wilson",
]
