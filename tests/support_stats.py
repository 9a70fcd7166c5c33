"""Goodness of fit of a selection: shared by the tests of mechanisms that select by the
exponential mechanism (MWEM's rounds, AIM's rounds)."""
import numpy as np


def exponential_pvalue(got, scores, a):
    """The chi-square p-value of the counts ``got`` (one per candidate) against the
    exponential mechanism's probabilities, proportional to ``exp(a * scores)``; the
    outcomes expected fewer than 5 times are pooled into one bin."""
    from scipy import stats
    draws = int(np.sum(got))
    p = np.exp(a * (scores - scores.max()))
    p /= p.sum()
    keep = p * draws >= 5
    assert keep.sum() >= 3                  # several likely outcomes
    observed = np.append(got[keep], got[~keep].sum())
    expected = np.append(p[keep], p[~keep].sum()) * draws
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    return stats.chisquare(observed, expected).pvalue
