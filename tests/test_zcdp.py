"""dpfast.zcdp: zCDP costs and the tight conversion to and from (epsilon, delta).

The conversion is checked three ways: against the exact infimum computed in 50-digit
arithmetic (mpmath), against Google's ``dp_accounting`` and against OpenDP where installed.
"Never below" is the safety property (a reported epsilon or delta below the truth would
overstate the guarantee); "within 1e-9 relative" is tightness."""
import doctest
import math
from fractions import Fraction

import pytest

import dpfast.zcdp as Z
from dpfast.zcdp import (delta_from_rho, epsilon_from_rho, rho_from_epsilon,
                         rho_from_epsilon_delta, rho_gaussian)

RHOS = [1e-4, 0.01, 0.5, 2.63, 10.0]
DELTAS = [1e-5, 1e-10]
# Beyond the grid: tiny and huge rho, delta near 1 and near the float minimum.
EDGES = [(1e-12, 1e-5), (1e-300, 0.5), (1e6, 1e-5), (1e300, 1e-10), (0.5, 1 - 2.0**-53),
         (0.5, 0.9), (0.5, 5e-324), (3.0, 1e-300)]


def classic(rho, delta):
    """Bun & Steinke 2016, Proposition 1.3."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


# ---------------------------------------------------------------------------------------------
# The exact infimum, in 50-digit arithmetic
# ---------------------------------------------------------------------------------------------

mp = pytest.importorskip("mpmath", reason="mpmath (in the test extra) computes the reference")


def mp_root(g, lo, hi):
    """The root of an increasing function g on [lo, hi] by bisection in mpmath (geometric
    midpoints: the root can be anywhere between 1e-160 and 1e160)."""
    lo, hi = mp.mpf(lo), mp.mpf(hi)
    assert g(lo) < 0 < g(hi)
    for _ in range(500):
        mid = mp.sqrt(lo * hi)
        if g(mid) < 0:
            lo = mid
        else:
            hi = mid
    return hi


def exact_epsilon(rho, delta):
    """inf over t = alpha - 1 of rho (1+t) + (L - log(1+t))/t - log(1 + 1/t), at least 0."""
    with mp.workdps(50):
        r, big_l = mp.mpf(rho), -mp.log(mp.mpf(delta))
        t = mp_root(lambda t: r * t * t + mp.log1p(t) - big_l, mp.mpf(10) ** -200,
                    mp.mpf(10) ** 200)
        return max(mp.mpf(0), r * (1 + t) + (big_l - mp.log1p(t)) / t - mp.log1p(1 / t))


def exact_delta(rho, epsilon):
    """inf over t of exp(t (rho (1+t) - eps - log(1 + 1/t)) - log(1+t)), at most 1."""
    with mp.workdps(50):
        r, e = mp.mpf(rho), mp.mpf(epsilon)
        t = mp_root(lambda t: r * (1 + 2 * t) - e - mp.log1p(1 / t), mp.mpf(10) ** -5000,
                    mp.mpf(10) ** 300)
        return min(mp.mpf(1), mp.exp(t * (r * (1 + t) - e - mp.log1p(1 / t)) - mp.log1p(t)))


@pytest.mark.parametrize("rho,delta", [(r, d) for r in RHOS for d in DELTAS] + EDGES)
def test_epsilon_never_below_the_exact_infimum_and_tight(rho, delta):
    ours, exact = epsilon_from_rho(rho, delta), exact_epsilon(rho, delta)
    assert ours >= exact
    assert ours <= exact * (1 + 1e-13) + 1e-300


@pytest.mark.parametrize("rho,epsilon", [(1e-4, 0.05), (0.01, 0.5), (0.5, 1.0), (0.5, 4.7),
                                         (2.63, 12.0), (10.0, 40.0), (1e-3, 0.0),
                                         (1e-9, 1e-3), (1e4, 1.0), (0.5, 700.0)])
def test_delta_never_below_the_exact_infimum_and_tight(rho, epsilon):
    ours, exact = delta_from_rho(rho, epsilon), exact_delta(rho, epsilon)
    assert ours >= exact
    # log delta is evaluated with an allowance of a few ulp of its terms (hundreds for
    # delta = 1e-115), which exp turns into a relative 1e-12 at most
    assert ours <= exact * (1 + 1e-10) + 1e-300
    assert 0.0 < ours <= 1.0


def test_known_values():
    # Canonne, Kamath & Steinke 2020 against the classic bound, pinned from the 50-digit
    # infimum (tests above); and the figure the Adult marginals use (rho for eps 1, delta 1e-9).
    assert epsilon_from_rho(0.5, 1e-5) == pytest.approx(4.728386984943314, rel=1e-14)
    assert epsilon_from_rho(0.01, 1e-10) == pytest.approx(0.8643211857241729, rel=1e-14)
    assert rho_from_epsilon_delta(1.0, 1e-9) == pytest.approx(0.014973057673588386, rel=1e-12)
    assert rho_from_epsilon(1.0) == 0.5
    assert rho_from_epsilon(2.0) == 2.0
    assert rho_gaussian(1.0, 2.0) == 0.125
    assert rho_gaussian(3.0, 1.5) == 2.0
    assert epsilon_from_rho(0.0, 1e-5) == 0.0 and delta_from_rho(0.0, 1.0) == 0.0


@pytest.mark.parametrize("value", [0.1, 0.3, 1e-5, 1.1, math.pi, 2.0**-500, 1e-170])
def test_costs_round_up_never_down(value):
    exact_pure = Fraction(value) ** 2 / 2
    got = rho_from_epsilon(value)
    assert Fraction(got) >= exact_pure and got > 0.0
    assert Fraction(math.nextafter(got, 0.0)) < exact_pure       # and by at most one step
    exact_gauss = Fraction(value) ** 2 / (2 * Fraction(7.3) ** 2)
    got = rho_gaussian(value, 7.3)
    assert Fraction(got) >= exact_gauss and got > 0.0            # 1e-170: never rounds to 0
    assert Fraction(math.nextafter(got, 0.0)) < exact_gauss


def test_costs_beyond_the_float_range_are_infinite():
    assert rho_from_epsilon(1e200) == math.inf
    assert rho_gaussian(1e200, 1e-200) == math.inf


# ---------------------------------------------------------------------------------------------
# Shape of the conversion
# ---------------------------------------------------------------------------------------------

def test_monotone():
    rhos = sorted({10.0 ** k for k in range(-8, 4)} | {2.63, 0.5, 0.015})
    for delta in (1e-3, 1e-5, 1e-10, 1e-50):
        eps = [epsilon_from_rho(r, delta) for r in rhos]
        assert all(a < b for a, b in zip(eps, eps[1:]) if b > 0)      # increasing in rho
    for rho in (1e-4, 0.5, 10.0):
        eps = [epsilon_from_rho(rho, d) for d in (0.5, 1e-2, 1e-5, 1e-10, 1e-100)]
        assert all(a < b or a == b == 0.0 for a, b in zip(eps, eps[1:]))   # decreasing in delta
        deltas = [delta_from_rho(rho, e) for e in (0.0, 0.5, 2.0, 10.0, 50.0)]
        # decreasing in epsilon, down to the smallest float (a delta below it is reported as
        # that float, never as 0)
        assert all(a > b or a == b == 5e-324 for a, b in zip(deltas, deltas[1:]))
    deltas = [delta_from_rho(r, 1.0) for r in (1e-4, 1e-2, 0.1, 1.0, 10.0)]
    assert all(a < b for a, b in zip(deltas, deltas[1:]))             # increasing in rho


@pytest.mark.parametrize("rho", RHOS + [1e-8, 100.0])
@pytest.mark.parametrize("delta", DELTAS + [1e-3, 1e-100])
def test_never_larger_than_the_classic_bound(rho, delta):
    assert epsilon_from_rho(rho, delta) < classic(rho, delta)


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", DELTAS + [1e-3])
def test_round_trips(rho, delta):
    eps = epsilon_from_rho(rho, delta)
    # delta at the (rounded-up) epsilon: no larger than delta, and only by rounding smaller
    back = delta_from_rho(rho, eps)
    assert delta * (1 - 1e-12) <= back <= delta
    # the rho that (eps, delta) allows: at least rho up to rounding, and within the budget
    allowed = rho_from_epsilon_delta(eps, delta)
    assert allowed == pytest.approx(rho, rel=1e-12)
    assert epsilon_from_rho(allowed, delta) <= eps


@pytest.mark.parametrize("epsilon,delta", [(1.0, 1e-9), (0.1, 1e-5), (10.0, 1e-10),
                                           (1e-6, 1e-5), (1e-300, 1e-5), (1e300, 1e-5),
                                           (1.0, 1 - 2.0**-53), (50.0, 5e-324)])
def test_rho_from_epsilon_delta_is_the_largest_within_the_budget(epsilon, delta):
    rho = rho_from_epsilon_delta(epsilon, delta)
    assert epsilon_from_rho(rho, delta) <= epsilon                    # never exceeds
    nxt = math.nextafter(rho, math.inf)
    assert epsilon_from_rho(nxt, delta) > epsilon                     # the largest such
    big_l = -math.log(delta)     # the classic bound's rho, in a form that does not cancel:
    classic_rho = (epsilon / (math.sqrt(big_l + epsilon) + math.sqrt(big_l))) ** 2
    assert rho >= classic_rho * (1 - 1e-14)


def test_zero_epsilon_is_safe():
    # For rho tiny against delta the bound is negative and reported as 0; the same bound at
    # epsilon = 0 must then give a delta no larger than the one asked for.
    for rho, delta in [(1e-12, 1e-5), (1e-10, 1e-4), (1e-4, 0.5), (0.5, 0.999)]:
        assert epsilon_from_rho(rho, delta) == 0.0
        assert delta_from_rho(rho, 0.0) <= delta


# ---------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------

BAD = [(epsilon_from_rho, (-1.0, 1e-5), "rho", ValueError),
       (epsilon_from_rho, (math.nan, 1e-5), "rho", ValueError),
       (epsilon_from_rho, (math.inf, 1e-5), "rho", ValueError),
       (epsilon_from_rho, ("0.5", 1e-5), "rho", TypeError),
       (epsilon_from_rho, (0.5, 0.0), "delta", ValueError),
       (epsilon_from_rho, (0.5, 1.0), "delta", ValueError),
       (epsilon_from_rho, (0.5, None), "delta", TypeError),
       (delta_from_rho, (0.5, -0.1), "epsilon", ValueError),
       (delta_from_rho, (0.5, math.inf), "epsilon", ValueError),
       (delta_from_rho, (True, 1.0), "rho", TypeError),
       (rho_from_epsilon, (0.0,), "epsilon", ValueError),
       (rho_from_epsilon, (-0.0,), "epsilon", ValueError),
       (rho_from_epsilon, ([1.0],), "epsilon", TypeError),
       (rho_gaussian, (0.0, 1.0), "sensitivity", ValueError),
       (rho_gaussian, (1.0, 0.0), "sigma", ValueError),
       (rho_gaussian, (1.0, math.nan), "sigma", ValueError),
       (rho_from_epsilon_delta, (0.0, 1e-5), "epsilon", ValueError),
       (rho_from_epsilon_delta, (1.0, 0.0), "delta", ValueError),
       (rho_from_epsilon_delta, (1.0, 1.5), "delta", ValueError)]


@pytest.mark.parametrize("func,args,name,exc", BAD,
                         ids=[f"{f.__name__}-{n}-{i}" for i, (f, _, n, _) in enumerate(BAD)])
def test_bad_arguments_name_the_argument(func, args, name, exc):
    with pytest.raises(exc, match=rf"The '{name}' parameter of {func.__name__} must be"):
        func(*args)


def test_docstring_examples():
    attempted = 0
    for module in (Z.conversions, Z.discrete, Z.calibration):
        result = doctest.testmod(module,
                                 optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0
        attempted += result.attempted
    assert attempted >= 15


# ---------------------------------------------------------------------------------------------
# Other libraries
# ---------------------------------------------------------------------------------------------

def optimal_order(rho, delta):
    """The alpha where CKS's epsilon is smallest: the root of rho (alpha-1)**2 + log(alpha)
    = log(1/delta) (the derivative's zero; see dpfast.zcdp's notes), independently of
    dpfast, in 50 digits."""
    with mp.workdps(50):
        r, big_l = mp.mpf(rho), -mp.log(mp.mpf(delta))
        return float(1 + mp_root(lambda t: r * t * t + mp.log1p(t) - big_l,
                                 mp.mpf(10) ** -200, mp.mpf(10) ** 200))


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", DELTAS)
def test_agrees_with_dp_accounting(rho, delta):
    """Google's ``compute_epsilon`` (dp_accounting/rdp/rdp_privacy_accountant.py) converts
    Renyi divergences ``rdp[i]`` at orders ``orders[i]`` with the same CKS 2020 Proposition
    12 bound, ``r + log1p(-1/a) - log(delta a)/(a - 1)``, and takes the smallest over the
    orders it is given: the infimum over those orders, not over all alpha. rho-zCDP is
    ``rdp = rho * orders`` (what its RdpAccountant composes for a ``ZCDpEvent(rho)``, checked
    below where the event exists: not yet in 0.4.0). Given its default orders plus 401
    orders within 0.1% of the optimal one (the optimal one among them), it must agree with
    ours within 1e-9 relative, and ours (the same bound plus its rounding-error allowance)
    must not be below it."""
    pytest.importorskip("dp_accounting",
                        reason="dp_accounting (pip install dp-accounting) not installed")
    import dp_accounting
    from dp_accounting.rdp import rdp_privacy_accountant as rdp
    star = optimal_order(rho, delta)
    orders = list(rdp.DEFAULT_RDP_ORDERS) + [star * (1 + k * 2.5e-6) for k in range(-200, 201)]
    theirs, _ = rdp.compute_epsilon(orders, [rho * a for a in orders], delta)
    ours = epsilon_from_rho(rho, delta)
    assert ours >= theirs
    assert ours <= theirs * (1 + 1e-9)
    if hasattr(dp_accounting, "ZCDpEvent"):
        accountant = rdp.RdpAccountant(orders=orders)
        accountant.compose(dp_accounting.ZCDpEvent(rho))
        assert accountant.get_epsilon(delta) == pytest.approx(theirs, rel=1e-15)
    # Their default orders alone (a fixed grid up to 1024 or so) are never tighter than the
    # optimum over every alpha, which ours finds.
    default, _ = rdp.compute_epsilon(rdp.DEFAULT_RDP_ORDERS,
                                     [rho * a for a in rdp.DEFAULT_RDP_ORDERS], delta)
    assert default >= ours * (1 - 1e-13)


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", DELTAS)
def test_agrees_with_opendp(rho, delta):
    """OpenDP's ``make_zCDP_to_approxDP`` (cdp_epsilon.rs) bisects over alpha for the same
    bound on the derivative's sign, as here, and evaluates it with upward-rounded arithmetic.
    The zCDP measurement is OpenDP's Gaussian mechanism at scale 1/sqrt(2 rho) and
    sensitivity 1, whose rho OpenDP computes (rounded up, a few ulp from ``rho``); ours is
    converted from that same rho."""
    odp = pytest.importorskip("opendp.prelude", reason="opendp not installed")
    odp.enable_features("contrib")
    meas = odp.m.make_gaussian(odp.atom_domain(T=float, nan=False),
                               odp.absolute_distance(T=float), scale=1 / math.sqrt(2 * rho))
    their_rho = meas.map(1.0)
    assert their_rho == pytest.approx(rho, rel=1e-14)
    theirs = odp.c.make_zCDP_to_approxDP(meas).map(1.0).epsilon(delta)
    ours = epsilon_from_rho(their_rho, delta)
    assert ours >= theirs
    assert ours <= theirs * (1 + 1e-9)
