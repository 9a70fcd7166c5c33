"""Argument validation: every bad input fails loudly, early and without side effects.

A rejected call must raise TypeError (not a number / wrong type) or ValueError (a number out
of range, NaN, infinity), name the offending parameter and show the value received, and it
must do so before the accountant is charged or a single word is taken from the generator:
otherwise a caller who retries after a typo silently pays twice, or a failed call still
consumes randomness that a later release was meant to use.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dpfast as dp

NAN = float("nan")
INF = float("inf")


# -- helpers ---------------------------------------------------------------------------
def rng_snapshot(rng):
    """Comparable copy of a ChaCha20 position (the key comes back as an ndarray)."""
    s = rng.state
    inner = dict(s["state"], key=tuple(int(k) for k in s["state"]["key"]))
    return dict(s, state=inner)


def used_accountant():
    # Non-zero spent and a non-empty ledger, so "unchanged" is not trivially "still zero".
    acct = dp.Accountant(epsilon=1e6, delta=0.5)
    acct.spend(0.25, 1e-6, label="earlier release")
    return acct


def accountant_record(acct):
    return acct.spent, len(acct), acct.ledger


def assert_message(exc_info, name, received):
    """The message names the parameter and, after "Got", shows what was received."""
    msg = str(exc_info.value)
    assert f"'{name}'" in msg, msg
    got = msg.lower().find("got")
    assert got >= 0, msg
    assert received in msg[got:], f"{received!r} not reported in: {msg}"


def assert_raises_exactly(exc, call):
    """pytest.raises, but a ValueError case must not be satisfied by a budget refusal."""
    with pytest.raises(exc) as info:
        call()
    assert not isinstance(info.value, dp.BudgetExceededError)
    if exc is ValueError:
        assert not isinstance(info.value, TypeError)
    return info


def test_rng_snapshot_detects_a_draw():
    # Guards the side-effect checks below: an unchanged snapshot must mean "nothing drawn".
    rng = dp.ChaCha20(seed=1)
    before = rng_snapshot(rng)
    dp.laplace(1.0, rng=rng)
    assert rng_snapshot(rng) != before


# -- bad-input tables ------------------------------------------------------------------
VE, TE = ValueError, TypeError

EPSILON_BAD = [
    (0, VE), (-0.0, VE), (-1, VE), (NAN, VE), (INF, VE), (-INF, VE),
    ("0.1", TE), (None, TE), (True, TE), (complex(1, 0), TE), ([0.1], TE),
]
SENSITIVITY_BAD = [
    (0, VE), (-1, VE), (-0.0, VE), (NAN, VE), (INF, VE), ("1", TE), (None, TE),
]
# (value, exception, what the message must report): for NaN/inf data the offending entry's
# kind and position, never its value; for data of the wrong kind its type, dtype or shape,
# not a dump of the records (validation.py: errors describe data by kind and position).
VALUE_BAD = [
    (NAN, VE, "a value that is NaN"),
    (INF, VE, "a value that is infinite"),
    (-INF, VE, "a value that is infinite"),
    ([1.0, NAN], VE, "an entry at index 1 is NaN"),
    (np.array([[1.0], [np.inf]]), VE, "an entry at index (1, 0) is infinite"),
    ("abc", TE, "a str of 3 characters"),
    (None, TE, "None"),
    ([1, "a"], TE, "a list of 2 items"),
    (np.array([True]), TE, "dtype bool and shape (1,)"),
    (True, TE, "a bool"),
    (1 + 2j, TE, "a complex number"),
    (np.array([1 + 0j]), TE, "dtype complex128"),
    (np.array([1.0, 2.0], dtype=object), TE, "dtype object"),
    (np.array(["2024-01-01"], dtype="datetime64[D]"), TE, "dtype datetime64[D]"),
    ([[1.0], [1.0, 2.0]], VE, "a list of 2 items"),
]
# A Generator over a non-cryptographic bit generator is refused as the wrong *kind* of rng;
# its message names the bit generator rather than repeating the Generator's repr. A seed is
# a key: described, never shown.
RNG_BAD = [
    ({"x": 1}, TE, "a dict of 1 entries"),
    ("seed", TE, "a str of 4 characters"),
    (-1, VE, "a negative int"),
    (np.random.default_rng(0), TE, "PCG64"),
    (np.random.Generator(np.random.MT19937(0)), TE, "MT19937"),
    (1.5, TE, "a float"),
]
THREADS_BAD = [(0, VE), (-1, VE), (1.5, TE), ("2", TE)]
ACCOUNTANT_BAD = [("acct", TE), (1.0, TE)]


def _cases(param, table):
    out = []
    for row in table:
        bad, exc = row[0], row[1]
        received = row[2] if len(row) > 2 else repr(bad)
        out.append(pytest.param(param, bad, exc, received, id=f"{param}={received}"))
    return out


MECHANISM_CASES = (
    _cases("epsilon", EPSILON_BAD)
    + _cases("sensitivity", SENSITIVITY_BAD)
    + _cases("value", VALUE_BAD)
    + _cases("rng", RNG_BAD)
    + _cases("threads", THREADS_BAD)
    + _cases("accountant", ACCOUNTANT_BAD)
)


@pytest.mark.parametrize("param, bad, exc, received", MECHANISM_CASES)
def test_laplace_mechanism_rejects_bad_argument(param, bad, exc, received):
    acct = used_accountant()
    rng = dp.ChaCha20(seed=1)
    kwargs = dict(value=3.0, sensitivity=1.0, epsilon=0.5, accountant=acct, rng=rng,
                  threads=None)
    kwargs[param] = bad
    value = kwargs.pop("value")
    record = accountant_record(acct)
    default_len = len(dp.default_accountant())
    rng_before = rng_snapshot(rng)

    info = assert_raises_exactly(exc, lambda: dp.laplace_mechanism(value, **kwargs))

    assert_message(info, param, received)
    assert accountant_record(acct) == record
    # A bad explicit accountant must not fall back to charging the default one.
    assert len(dp.default_accountant()) == default_len
    if param != "rng":
        assert rng_snapshot(rng) == rng_before


def test_laplace_mechanism_bad_input_with_default_accountant_charges_nothing():
    rng = dp.ChaCha20(seed=1)
    default = dp.default_accountant()
    n, spent = len(default), default.spent
    rng_before = rng_snapshot(rng)
    with pytest.raises(ValueError):
        dp.laplace_mechanism(1.0, sensitivity=1.0, epsilon=NAN, rng=rng)
    with pytest.raises(ValueError):
        dp.laplace_mechanism([1.0, NAN], sensitivity=1.0, epsilon=0.5, rng=rng)
    assert (len(default), default.spent) == (n, spent)
    assert rng_snapshot(rng) == rng_before


# -- raw noise functions ---------------------------------------------------------------
SCALE_BAD = [
    (0, VE), (-0.0, VE), (-1, VE), (NAN, VE), (INF, VE), (-INF, VE),
    (2.0**1001, VE), (math.nextafter(2.0**1000, INF), VE), (2.0**-1001, VE), (5e-324, VE),
    (2.0**-1000, VE), (math.nextafter(2.0**-900, 0), VE),
    ("1", TE), (None, TE), (True, TE), (complex(1, 0), TE), ([1.0], TE),
]
DISCRETE_SCALE_BAD = SCALE_BAD + [
    (math.nextafter(2.0**40, INF), VE), (2.0**41, VE), (1e13, VE),
]
SIZE_BAD = [(-1, VE), (1.5, TE), ("3", TE), ((2, -1), VE), ((2, 1.5), TE), (True, TE)]

NOISE_CASES = []
for _func, _base, _tables in [
    (dp.laplace, dict(scale=1.0, size=3),
     [("scale", SCALE_BAD), ("size", SIZE_BAD), ("rng", RNG_BAD), ("threads", THREADS_BAD)]),
    (dp.discrete_laplace, dict(scale=2.0, size=3),
     [("scale", DISCRETE_SCALE_BAD), ("size", SIZE_BAD), ("rng", RNG_BAD),
      ("threads", THREADS_BAD)]),
    (dp.uniform, dict(size=3),
     [("size", SIZE_BAD), ("rng", RNG_BAD), ("threads", THREADS_BAD)]),
]:
    for _param, _table in _tables:
        for _p in _cases(_param, _table):
            NOISE_CASES.append(pytest.param(_func, _base, *_p.values,
                                            id=f"{_func.__name__}-{_p.id}"))


@pytest.mark.parametrize("func, base, param, bad, exc, received", NOISE_CASES)
def test_noise_functions_reject_bad_argument(func, base, param, bad, exc, received):
    rng = dp.ChaCha20(seed=1)
    kwargs = dict(base, rng=rng, threads=None)
    kwargs[param] = bad
    rng_before = rng_snapshot(rng)

    info = assert_raises_exactly(exc, lambda: func(**kwargs))

    assert_message(info, param, received)
    if param != "rng":
        assert rng_snapshot(rng) == rng_before


@pytest.mark.parametrize("bad, exc, received", [p.values[1:] for p in _cases("scale", SCALE_BAD)])
def test_laplace_granularity_rejects_bad_scale(bad, exc, received):
    info = assert_raises_exactly(exc, lambda: dp.laplace_granularity(bad))
    assert_message(info, "scale", received)


PRIVACY_LOSS_CASES = (
    [pytest.param(False, p.values[1], 1.0, *p.values[2:], "scale", id=f"grid-{p.id}")
     for p in _cases("scale", SCALE_BAD)]
    + [pytest.param(True, p.values[1], 1.0, *p.values[2:], "scale", id=f"discrete-{p.id}")
       for p in _cases("scale", DISCRETE_SCALE_BAD)]
    + [pytest.param(d, 10.0, p.values[1], *p.values[2:], "sensitivity",
                    id=f"{'discrete' if d else 'grid'}-{p.id}")
       for d in (False, True) for p in _cases("sensitivity", SENSITIVITY_BAD)]
)


@pytest.mark.parametrize("discrete, scale, sensitivity, exc, received, name",
                         PRIVACY_LOSS_CASES)
def test_laplace_privacy_loss_rejects_bad_argument(discrete, scale, sensitivity, exc,
                                                   received, name):
    info = assert_raises_exactly(
        exc, lambda: dp.laplace_privacy_loss(scale, sensitivity, discrete=discrete))
    assert_message(info, name, received)


def test_discrete_scale_upper_bound_is_inclusive():
    # discrete_laplace documents its scale range as [2^-900, 2^40], closed at the top.
    rng = dp.ChaCha20(seed=1)
    assert isinstance(dp.discrete_laplace(2.0**40, rng=rng), int)
    assert math.isfinite(dp.laplace_privacy_loss(2.0**40, 1.0, discrete=True))


def test_scale_lower_bound_is_inclusive():
    rng = dp.ChaCha20(seed=1)
    assert math.isfinite(dp.laplace(2.0**-900, rng=rng))
    assert isinstance(dp.discrete_laplace(2.0**-900, rng=rng), int)
    assert dp.laplace_granularity(2.0**-900) > 0


def test_minimum_scale_mechanism_is_finite_and_on_grid():
    # Below 2^-900 the grid step would be subnormal and 1/g infinite, so rounding the input
    # to the grid would give NaN/inf that depend on the input: such scales are refused.
    x = np.array([0.0, 5e-302, -5e-302, 1e-280])
    out = dp.laplace_mechanism(x, sensitivity=2.0**-900, epsilon=1.0,
                               accountant=dp.Accountant(), rng=1)
    g = dp.laplace_granularity(2.0**-900)
    assert np.isfinite(out).all() and (out / g == np.round(out / g)).all()
    with pytest.raises(ValueError, match="'epsilon'"):
        dp.laplace_mechanism(0.0, sensitivity=2.0**-1000, epsilon=1.0)


def test_uniform_size_too_large_for_memory_is_rejected_cleanly():
    # A shape numpy cannot even describe must be reported as a bad 'size' before the call
    # takes its sub-key from the generator.
    rng = dp.ChaCha20(seed=1)
    before = rng_snapshot(rng)
    with pytest.raises((ValueError, TypeError)) as info:
        dp.uniform((2**40, 2**40), rng=rng)
    assert "'size'" in str(info.value), str(info.value)
    assert rng_snapshot(rng) == before


# -- Accountant arguments --------------------------------------------------------------
ACCT_EPSILON_BAD = [
    (0, VE), (-0.0, VE), (-1, VE), (NAN, VE), (-INF, VE),
    ("1", TE), (None, TE), (True, TE), (complex(1, 0), TE), ([1.0], TE),
]
ACCT_DELTA_BAD = [
    (-0.1, VE), (1.5, VE), (NAN, VE), (INF, VE), (-INF, VE),
    ("0", TE), (None, TE), (True, TE), (complex(0, 0), TE),
]


@pytest.mark.parametrize("param, bad, exc, received",
                         _cases("epsilon", ACCT_EPSILON_BAD) + _cases("delta", ACCT_DELTA_BAD))
def test_accountant_constructor_rejects_bad_budget(param, bad, exc, received):
    kwargs = dict(epsilon=1.0, delta=1e-6)
    kwargs[param] = bad
    info = assert_raises_exactly(exc, lambda: dp.Accountant(**kwargs))
    assert_message(info, param, received)


def test_accountant_constructor_accepts_documented_extremes():
    assert dp.Accountant(epsilon=INF).epsilon == INF
    assert dp.Accountant(epsilon=1.0, delta=0.0).delta == 0.0
    assert dp.Accountant(epsilon=1.0, delta=1.0).delta == 1.0  # budget interval is [0, 1]


# spend() takes delta in [0, 1): a single release with delta = 1 offers no privacy at all.
SPEND_DELTA_BAD = [
    (-0.1, VE), (1.0, VE), (NAN, VE), (INF, VE), ("0", TE), (None, TE), (True, TE),
]


@pytest.mark.parametrize("param, bad, exc, received",
                         _cases("epsilon", ACCT_EPSILON_BAD + [(INF, VE)])
                         + _cases("delta", SPEND_DELTA_BAD))
def test_accountant_spend_rejects_bad_argument(param, bad, exc, received):
    acct = used_accountant()
    kwargs = dict(epsilon=0.1, delta=0.0)
    kwargs[param] = bad
    record = accountant_record(acct)
    info = assert_raises_exactly(exc, lambda: acct.spend(**kwargs))
    assert_message(info, param, received)
    assert accountant_record(acct) == record


@pytest.mark.parametrize("bad, exc, received", [p.values[1:] for p in _cases("epsilon",
                                                                             EPSILON_BAD)])
def test_accountant_check_rejects_bad_epsilon(bad, exc, received):
    acct = used_accountant()
    record = accountant_record(acct)
    info = assert_raises_exactly(exc, lambda: acct.check(bad))
    assert_message(info, "epsilon", received)
    assert accountant_record(acct) == record


# -- arguments too large for Python floats or C ints -----------------------------------
HUGE = 10**400  # a valid Python int that float() cannot represent


@pytest.mark.parametrize("call, name", [
    pytest.param(lambda rng, acct: dp.laplace_mechanism(
        1, sensitivity=1.0, epsilon=HUGE, accountant=acct, rng=rng), "epsilon",
        id="mechanism-epsilon"),
    pytest.param(lambda rng, acct: dp.laplace_mechanism(
        1, sensitivity=HUGE, epsilon=1.0, accountant=acct, rng=rng), "sensitivity",
        id="mechanism-sensitivity"),
    pytest.param(lambda rng, acct: dp.laplace(HUGE, rng=rng), "scale", id="laplace"),
    pytest.param(lambda rng, acct: dp.discrete_laplace(HUGE, rng=rng), "scale",
                 id="discrete_laplace"),
    pytest.param(lambda rng, acct: dp.laplace_granularity(HUGE), "scale",
                 id="laplace_granularity"),
    pytest.param(lambda rng, acct: dp.laplace_privacy_loss(1.0, HUGE), "sensitivity",
                 id="privacy_loss"),
    pytest.param(lambda rng, acct: acct.spend(HUGE), "epsilon", id="spend"),
])
def test_huge_int_parameters_raise_value_error(call, name):
    # 10**400 is a real number, so the honest answer is "out of range": a ValueError naming
    # the parameter, not an OverflowError from float() deep inside the check.
    acct = used_accountant()
    rng = dp.ChaCha20(seed=1)
    record, before = accountant_record(acct), rng_snapshot(rng)
    with pytest.raises(ValueError) as info:
        call(rng, acct)
    assert f"'{name}'" in str(info.value), str(info.value)
    assert accountant_record(acct) == record
    assert rng_snapshot(rng) == before


def test_accountant_huge_int_budget_is_accepted_or_rejected_cleanly():
    # Either reading (unlimited, or out of range) is defensible; an OverflowError is not.
    try:
        acct = dp.Accountant(epsilon=HUGE)
    except (ValueError, TypeError) as e:
        assert "'epsilon'" in str(e)
    else:
        assert acct.epsilon > 1e300


@pytest.mark.parametrize("threads", [2**31, 2**40, 2**64])
def test_huge_thread_count_never_fails_after_charging(threads):
    # An int thread count passes the documented rule (int >= 1); whatever the library does
    # with a count no C int holds, it must not charge or draw and then fail.
    acct = used_accountant()
    rng = dp.ChaCha20(seed=1)
    record, before = accountant_record(acct), rng_snapshot(rng)
    try:
        out = dp.laplace_mechanism(1, sensitivity=1.0, epsilon=0.5, accountant=acct,
                                   rng=rng, threads=threads)
    except (ValueError, TypeError) as e:
        assert "'threads'" in str(e), str(e)
        assert accountant_record(acct) == record
        assert rng_snapshot(rng) == before
    else:
        assert isinstance(out, int)
        assert acct.spent[0] == 0.75


@pytest.mark.parametrize("threads", [2**31, 2**40])
def test_huge_thread_count_noise_function_never_fails_after_drawing(threads):
    rng = dp.ChaCha20(seed=1)
    before = rng_snapshot(rng)
    try:
        out = dp.laplace(1.0, 4, rng=rng, threads=threads)
    except (ValueError, TypeError) as e:
        assert "'threads'" in str(e), str(e)
        assert rng_snapshot(rng) == before
    else:
        assert out.shape == (4,)


# -- out-of-range data -----------------------------------------------------------------
def _mechanism_rejects_value(value, hidden, sensitivity=1.0, epsilon=1.0):
    """Refused before the charge, the message naming the entry by position (or as the single
    value) and never showing it: ``hidden`` is the offending entry as repr or str prints it."""
    acct = used_accountant()
    rng = dp.ChaCha20(seed=1)
    record, before = accountant_record(acct), rng_snapshot(rng)
    info = assert_raises_exactly(ValueError, lambda: dp.laplace_mechanism(
        value, sensitivity=sensitivity, epsilon=epsilon, accountant=acct, rng=rng))
    msg = str(info.value)
    assert "'value'" in msg, msg
    assert "Got a value that" in msg or "Got an entry at index" in msg, msg
    assert hidden.lstrip("-") not in msg, msg
    assert accountant_record(acct) == record
    assert rng_snapshot(rng) == before


def _mechanism_accepts(value, sensitivity=1.0, epsilon=1.0):
    acct = dp.Accountant()
    out = dp.laplace_mechanism(value, sensitivity=sensitivity, epsilon=epsilon,
                               accountant=acct, rng=dp.ChaCha20(seed=1))
    assert acct.spent == (epsilon, 0.0)
    return out


@pytest.mark.parametrize("sensitivity, epsilon", [(1.0, 1.0), (3.0, 0.01), (1.0, 1e4)])
def test_float_value_beyond_grid_range_is_rejected(sensitivity, epsilon):
    # Grid arithmetic is exact only while |value| <= 2**52 grid steps.
    limit = 2.0**52 * dp.laplace_granularity(sensitivity / epsilon)
    for ok in (limit, -limit, 0.0, np.array([limit, -limit])):
        _mechanism_accepts(ok, sensitivity, epsilon)
    above = math.nextafter(limit, INF)
    _mechanism_rejects_value(above, repr(above), sensitivity, epsilon)
    _mechanism_rejects_value(-above, repr(-above), sensitivity, epsilon)
    _mechanism_rejects_value(np.array([0.0, 1.0, 2 * limit]), repr(2 * limit),
                             sensitivity, epsilon)


def test_float_grid_limit_at_unit_scale():
    assert dp.laplace_granularity(1.0) == 2.0**-24
    _mechanism_accepts(2.0**28)
    _mechanism_rejects_value(2.0**28 + 1.0, repr(2.0**28 + 1.0))


@pytest.mark.parametrize("value", [2**62, -(2**62), np.int64(2**62), np.array([0, -(2**62)])])
def test_integer_value_at_limit_is_accepted(value):
    out = _mechanism_accepts(value)
    assert isinstance(out, int) or out.dtype == np.int64


@pytest.mark.parametrize("value, entry", [
    (2**62 + 1, 2**62 + 1),
    (-(2**62) - 1, -(2**62) - 1),
    (np.array([0, 2**62 + 1]), 2**62 + 1),
    (np.iinfo(np.int64).max, np.iinfo(np.int64).max),
    (2**63, 2**63),                          # a Python int numpy stores as uint64
    (np.uint64(2**63), 2**63),
    (np.array([1, 2**64 - 1], dtype=np.uint64), 2**64 - 1),
    (np.array([2**62 + 1], dtype=np.uint64), 2**62 + 1),
    (2**64, 2**64),                          # beyond uint64: a Python int in an object array
])
def test_integer_value_beyond_limit_is_rejected(value, entry):
    _mechanism_rejects_value(value, str(entry))


@pytest.mark.parametrize("value", [
    pytest.param(np.iinfo(np.int64).min, id="np-int64-min"),
    pytest.param(-(2**63), id="python-int64-min"),
    pytest.param(np.array([0, np.iinfo(np.int64).min]), id="array-int64-min"),
])
def test_int64_minimum_is_rejected(value):
    # -2**63 is far beyond the documented |value| <= 2**62, and its absolute value does not
    # exist in int64: a magnitude check done with np.abs sees it as negative and lets it by.
    _mechanism_rejects_value(value, str(-(2**63)))


@pytest.mark.parametrize("value, entry", [
    ([2**64], 2**64),
    ([2**64, 1], 2**64),
    ([-(2**63) - 1], -(2**63) - 1),
    ([[1, 2], [3, 2**70]], 2**70),
])
def test_list_of_out_of_range_ints_is_a_value_error(value, entry):
    # The data check documents "integers outside int64" as a ValueError naming the entry,
    # and a bare Python int that large already gets one; a list of them is the same mistake.
    _mechanism_rejects_value(value, str(entry))


@pytest.mark.parametrize("sensitivity, epsilon, value", [
    (1.0, 1e-13, 1),          # discrete scale 1e13 > 2**40
    (1.0, 1e-305, 1.0),       # grid scale beyond 2**1000
    (1e-300, 1e10, 0.0),      # grid scale below 2**-900
])
def test_derived_scale_out_of_range_names_the_callers_parameters(sensitivity, epsilon, value):
    # laplace_mechanism has no 'scale' argument: an out-of-range sensitivity/epsilon must be
    # reported in terms of the arguments the caller actually passed.
    acct = used_accountant()
    rng = dp.ChaCha20(seed=1)
    record, before = accountant_record(acct), rng_snapshot(rng)
    info = assert_raises_exactly(ValueError, lambda: dp.laplace_mechanism(
        value, sensitivity=sensitivity, epsilon=epsilon, accountant=acct, rng=rng))
    msg = str(info.value)
    assert "'epsilon'" in msg or "'sensitivity'" in msg, msg
    assert repr(epsilon) in msg, msg
    assert accountant_record(acct) == record
    assert rng_snapshot(rng) == before


# -- property tests --------------------------------------------------------------------
def _scale_in_range(sensitivity, epsilon, high):
    if not (math.isfinite(epsilon) and epsilon > 0):
        return False
    if not (math.isfinite(sensitivity) and sensitivity > 0):
        return False
    scale = sensitivity / epsilon
    return 2.0**-900 <= scale <= high   # the documented range is closed


@settings(max_examples=200, deadline=None)
@given(epsilon=st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True))
def test_any_float_epsilon_succeeds_or_fails_cleanly(epsilon):
    acct = dp.Accountant()
    rng = dp.ChaCha20(seed=1)
    before = rng_snapshot(rng)
    expect_ok = _scale_in_range(1.0, epsilon, 2.0**1000)
    try:
        # value 0.0 is on every grid, so only epsilon decides the outcome.
        out = dp.laplace_mechanism(0.0, sensitivity=1.0, epsilon=epsilon, accountant=acct,
                                   rng=rng)
    except (ValueError, TypeError) as e:
        assert not expect_ok, f"epsilon={epsilon!r} rejected: {e}"
        assert not isinstance(e, dp.BudgetExceededError)
        assert (acct.spent, len(acct)) == ((0.0, 0.0), 0)
        assert rng_snapshot(rng) == before
    else:
        assert expect_ok, f"epsilon={epsilon!r} accepted"
        assert isinstance(out, float) and math.isfinite(out)
        assert acct.spent == (epsilon, 0.0) and len(acct) == 1


@settings(max_examples=150, deadline=None)
@given(sensitivity=st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True),
       epsilon=st.floats(min_value=1e-3, max_value=1e3))
def test_any_float_sensitivity_succeeds_or_fails_cleanly(sensitivity, epsilon):
    acct = dp.Accountant()
    rng = dp.ChaCha20(seed=1)
    before = rng_snapshot(rng)
    expect_ok = _scale_in_range(sensitivity, epsilon, 2.0**1000)
    try:
        out = dp.laplace_mechanism(0.0, sensitivity=sensitivity, epsilon=epsilon,
                                   accountant=acct, rng=rng)
    except (ValueError, TypeError) as e:
        assert not expect_ok, f"sensitivity={sensitivity!r} rejected: {e}"
        assert (acct.spent, len(acct)) == ((0.0, 0.0), 0)
        assert rng_snapshot(rng) == before
    else:
        assert expect_ok, f"sensitivity={sensitivity!r} accepted"
        assert math.isfinite(out)
        assert len(acct) == 1


@st.composite
def data_with_one_bad_entry(draw):
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4))
    arr = draw(hnp.arrays(dtype, shape, elements=st.floats(-1e6, 1e6, width=32)))
    bad = draw(st.sampled_from([NAN, INF, -INF]))
    arr.flat[draw(st.integers(0, arr.size - 1))] = bad
    as_list = draw(st.booleans())
    return (arr.tolist() if as_list else arr), bad


@settings(max_examples=150, deadline=None)
@given(case=data_with_one_bad_entry())
def test_nan_or_inf_anywhere_in_data_is_a_value_error(case):
    data, bad = case
    acct = used_accountant()
    rng = dp.ChaCha20(seed=1)
    record, before = accountant_record(acct), rng_snapshot(rng)
    info = assert_raises_exactly(ValueError, lambda: dp.laplace_mechanism(
        data, sensitivity=1.0, epsilon=1.0, accountant=acct, rng=rng))
    arr = np.asarray(data)
    where = (f"an entry at {dp.validation.position(np.argwhere(~np.isfinite(arr))[0])}"
             if arr.ndim else "a value that")
    assert_message(info, "value", f"{where} is {'NaN' if math.isnan(bad) else 'infinite'}")
    assert accountant_record(acct) == record
    assert rng_snapshot(rng) == before


# -- good inputs -----------------------------------------------------------------------
INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64]


@pytest.mark.parametrize("value", [7, -7, 0] + [d(7) for d in INT_DTYPES]
                         + [np.array(7, dtype=d) for d in INT_DTYPES],
                         ids=lambda v: f"{type(v).__name__}-{getattr(v, 'dtype', '')}")
def test_integer_scalar_gives_python_int(value):
    out = _mechanism_accepts(value)
    assert type(out) is int


@pytest.mark.parametrize("value", [7.5, -0.0, np.float64(7.5), np.float32(7.5),
                                   np.float16(7.5), np.array(7.5), np.array(7.5, np.float32)],
                         ids=lambda v: f"{type(v).__name__}-{getattr(v, 'dtype', '')}")
def test_float_scalar_gives_python_float(value):
    out = _mechanism_accepts(value)
    assert type(out) is float and math.isfinite(out)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_array_keeps_shape_and_becomes_int64(dtype):
    value = np.arange(6, dtype=dtype).reshape(2, 3)
    out = _mechanism_accepts(value)
    assert isinstance(out, np.ndarray)
    assert out.shape == (2, 3) and out.dtype == np.int64


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_array_keeps_shape_and_becomes_float64(dtype):
    value = np.linspace(-3, 3, 12, dtype=dtype).reshape(3, 4)
    out = _mechanism_accepts(value)
    assert out.shape == (3, 4) and out.dtype == np.float64
    assert np.isfinite(out).all()


@pytest.mark.parametrize("value, dtype, shape", [
    ([[1, 2], [3, 4]], np.int64, (2, 2)),
    ([1.5, 2.5, 3.5], np.float64, (3,)),
    (np.zeros((0,), dtype=np.int32), np.int64, (0,)),
    (np.zeros((2, 0), dtype=np.float32), np.float64, (2, 0)),
    (np.asfortranarray(np.arange(6.0).reshape(2, 3)), np.float64, (2, 3)),
    (np.arange(12)[::2], np.int64, (6,)),
])
def test_lists_empty_and_non_contiguous_arrays(value, dtype, shape):
    out = _mechanism_accepts(value)
    assert out.dtype == dtype and out.shape == shape


def test_check_shares():
    from dpfast.validation import check_shares
    assert check_shares([0.25, 0.75], 2, "split", "f") == (0.25, 0.75)
    assert check_shares(np.array([0.5, 0.5]), 2, "split", "f") == (0.5, 0.5)
    for bad, exc in [("ab", TypeError), (0.5, TypeError), ([0.5, "x"], TypeError),
                     ([0.5], ValueError), ([0.5, 0.6], ValueError), ([1.0, 0.0], ValueError),
                     ([float("nan"), 0.5], ValueError), ([1.5, -0.5], ValueError)]:
        with pytest.raises(exc, match="'split'"):
            check_shares(bad, 2, "split", "f")


def test_check_noise_scale_and_histogram():
    from dpfast.validation import check_histogram, check_noise_scale
    assert check_noise_scale(2.0, "'epsilon'", "f") == 2.0
    with pytest.raises(ValueError, match="'epsilon' and 'rounds' parameters of f"):
        check_noise_scale(2.0**1001, "'epsilon' and 'rounds'", "f")
    assert check_histogram([[1, 2], [0, 3]], "counts", "f").shape == (2, 2)
    with pytest.raises(ValueError, match="'counts'.*non-negative"):
        check_histogram([1.0, -2.0], "counts", "f")
    with pytest.raises(ValueError, match="'counts'"):
        check_histogram([1.0, float("nan")], "counts", "f")


def test_category_codes_of_integers_by_lookup_table_match_the_general_path():
    from dpfast.tables import category_codes
    rng = np.random.default_rng(0)
    values = rng.integers(-5, 40, 10_000)
    cats = [7, 3, 30, 0, 12, -2]
    want = np.array([cats.index(v) if v in cats else -1 for v in values.tolist()])
    for dtype in (np.int8, np.int16, np.int64, np.uint16):
        v = values.astype(dtype) if dtype != np.uint16 else np.abs(values).astype(dtype)
        w = want if dtype != np.uint16 else np.array(
            [cats.index(x) if x in cats else -1 for x in np.abs(values).tolist()])
        assert np.array_equal(category_codes(v, cats, "f"), w)
    # Categories that are not small integers take the general path.
    assert category_codes(np.array([1, 2]), [1.0, 2.0], "f").tolist() == [0, 1]
    assert category_codes(np.array([0, 2**20]), [0, 2**20], "f").tolist() == [0, 1]


# -- Arrow arrays as data ----------------------------------------------------------------------
# Every public function that takes data reads a pyarrow Array or ChunkedArray as it reads the
# numpy array of the same values: the same release for the same seed.

def _arrow_forms(values):
    pa = pytest.importorskip("pyarrow", reason="Arrow input needs pyarrow")
    arr = np.asarray(values)
    half = len(arr) // 2
    return [arr, pa.array(arr), pa.chunked_array([pa.array(arr[:half]), pa.array(arr[half:])])]


def _plain(result):
    """A release as comparable Python data (arrays, tuples, release objects)."""
    if isinstance(result, np.ndarray):
        return ("array", str(result.dtype), result.shape, result.tobytes())
    if isinstance(result, (tuple, list)):
        return tuple(_plain(r) for r in result)
    if isinstance(result, dict):
        return tuple(sorted((str(k), _plain(v)) for k, v in result.items()))
    if hasattr(result, "__dict__") and not isinstance(result, type):
        return tuple(sorted((k, _plain(v)) for k, v in vars(result).items()
                            if not k.startswith("_")))
    if isinstance(result, float) and math.isnan(result):
        return "nan"
    return result


def _release(f):
    return lambda x: f(x, dp.Accountant(delta=1e-3), dp.ChaCha20(7))


COUNTS8 = np.array([4, 0, 9, 3, 12, 7, 1, 5])
REALS8 = np.array([0.5, 1.25, -3.0, 2.0, 9.5, 0.0, 4.0, 1.5])
BITS8 = np.array([True, False, True, True, False, False, True, False])

ARROW_CASES = {
    "noisy_counts-int": (COUNTS8, _release(lambda x, a, g: dp.noisy_counts(
        x, epsilon=1.0, accountant=a, rng=g))),
    "noisy_counts-float": (REALS8, _release(lambda x, a, g: dp.noisy_counts(
        x, epsilon=1.0, accountant=a, rng=g))),
    "histogram": (REALS8, _release(lambda x, a, g: dp.histogram(
        x, 4, range=(-4, 10), epsilon=1.0, accountant=a, rng=g))),
    "histogramdd": (REALS8, _release(lambda x, a, g: dp.histogramdd(
        [x, x], 2, range=[(-4, 10), (-4, 10)], epsilon=1.0, accountant=a, rng=g))),
    "count_categories-int": (COUNTS8, _release(lambda x, a, g: dp.count_categories(
        x, [0, 4, 9], epsilon=1.0, other=True, accountant=a, rng=g))),
    "count_categories-str": (np.array(list("abcabcaa")), _release(
        lambda x, a, g: dp.count_categories(x, ["a", "b"], epsilon=1.0, other=True,
                                            accountant=a, rng=g))),
    "laplace_mechanism-int": (COUNTS8, _release(lambda x, a, g: dp.laplace_mechanism(
        x, sensitivity=1.0, epsilon=1.0, accountant=a, rng=g))),
    "laplace_mechanism-float": (REALS8, _release(lambda x, a, g: dp.laplace_mechanism(
        x, sensitivity=1.0, epsilon=1.0, accountant=a, rng=g))),
    "gaussian_mechanism": (REALS8, _release(lambda x, a, g: dp.gaussian_mechanism(
        x, sensitivity=1.0, epsilon=1.0, delta=1e-6, accountant=a, rng=g))),
    "exponential_mechanism": (REALS8, _release(lambda x, a, g: dp.exponential_mechanism(
        x, epsilon=1.0, accountant=a, rng=g))),
    "permute_and_flip": (REALS8, _release(lambda x, a, g: dp.permute_and_flip(
        x, epsilon=1.0, accountant=a, rng=g))),
    "report_noisy_max": (COUNTS8, _release(lambda x, a, g: dp.report_noisy_max(
        x, epsilon=1.0, accountant=a, rng=g))),
    "top_k": (REALS8, _release(lambda x, a, g: dp.top_k(
        x, 3, epsilon=1.0, accountant=a, rng=g))),
    "randomized_response-bool": (BITS8, _release(lambda x, a, g: dp.randomized_response(
        x, epsilon=1.0, accountant=a, rng=g))),
    "randomized_response-int": (BITS8.astype(np.int8), _release(
        lambda x, a, g: dp.randomized_response(x, epsilon=1.0, accountant=a, rng=g))),
    "randomized_response_categorical-codes": (COUNTS8 % 3, _release(
        lambda x, a, g: dp.randomized_response_categorical(x, 3, epsilon=1.0, accountant=a,
                                                           rng=g))),
    "randomized_response_categorical-str": (np.array(list("abcabcaa")), _release(
        lambda x, a, g: dp.randomized_response_categorical(x, ["a", "b", "c"], epsilon=1.0,
                                                           accountant=a, rng=g))),
    "rr_estimate_counts": (COUNTS8 % 3, lambda x: dp.rr_estimate_counts(x, 3, epsilon=1.0)),
    "rr_estimate_proportion": (BITS8, lambda x: dp.rr_estimate_proportion(x, epsilon=1.0)),
    "census_hierarchy": (COUNTS8, _release(lambda x, a, g: dp.census_hierarchy(
        x, [np.zeros(2, int), np.array([0, 0, 0, 0, 1, 1, 1, 1])], epsilon=1.0,
        accountant=a, rng=g))),
    "tree_mechanism": (COUNTS8, _release(lambda x, a, g: dp.tree_mechanism(
        x, epsilon=1.0, accountant=a, rng=g))),
    "crosstab": (np.array(list("abcabcaa")), _release(lambda x, a, g: dp.crosstab(
        {"c": x}, "c", keys={"c": ["a", "b", "c"]}, epsilon=1.0, accountant=a, rng=g))),
    "mwem": (COUNTS8, _release(lambda x, a, g: dp.mwem(
        x, dp.workloads.Prefixes(8), epsilon=1.0, rounds=2, accountant=a, rng=g))),
    "smalldb": (COUNTS8[:4], _release(lambda x, a, g: dp.smalldb(
        x, dp.workloads.Prefixes(4), epsilon=1.0, alpha=0.5, accountant=a, rng=g))),
    "PrivateMultiplicativeWeights": (COUNTS8, _release(
        lambda x, a, g: dp.PrivateMultiplicativeWeights(
            x, epsilon=1.0, alpha=0.3, accountant=a, rng=g).answer(dp.workloads.Prefixes(8)))),
    "AboveThreshold": (REALS8, _release(lambda x, a, g: dp.AboveThreshold(
        3.0, epsilon=1.0, accountant=a, rng=g).query(x))),
    "Sparse": (COUNTS8, _release(lambda x, a, g: dp.Sparse(
        6, epsilon=1.0, cutoff=2, accountant=a, rng=g).query(x))),
    "NumericSparse": (REALS8, _release(lambda x, a, g: dp.NumericSparse(
        3.0, epsilon=1.0, cutoff=2, accountant=a, rng=g).query(x))),
    "clip_nonnegative": (REALS8, lambda x: dp.postprocess.clip_nonnegative(x)),
    "consistent_counts": (REALS8, lambda x: dp.postprocess.consistent_counts(x, 20)),
    "project_simplex": (REALS8, lambda x: dp.postprocess.project_simplex(x, 5.0)),
    "round_preserving_sum": (np.abs(REALS8), lambda x: dp.postprocess.round_preserving_sum(
        x, 22)),
    "apply": (COUNTS8, lambda x: dp.postprocess.apply(x, "consistent", total=30)),
    "Workload.answer": (REALS8, lambda x: dp.workloads.Prefixes(8).answer(x)),
}


@pytest.mark.parametrize("name", sorted(ARROW_CASES))
def test_arrow_array_and_chunked_array_give_the_numpy_release(name):
    values, release_of = ARROW_CASES[name]
    numpy_form, array, chunked = _arrow_forms(values)
    expected = _plain(release_of(numpy_form))
    assert _plain(release_of(array)) == expected
    assert _plain(release_of(chunked)) == expected


def test_arrow_numeric_data_is_read_without_a_copy():
    pa = pytest.importorskip("pyarrow", reason="Arrow input needs pyarrow")
    arrow = pa.array(np.arange(1000, dtype=np.int32))
    arr = dp.validation.as_array(arrow, "counts", "f")
    assert arr.dtype == np.int32 and not arr.flags.writeable
    assert arr.__array_interface__["data"][0] == arrow.buffers()[1].address
    # The .base chain ends in None (code looking for a memory map walks it).
    base = arr
    while isinstance(base, np.ndarray):
        base = base.base
    assert base is None or hasattr(base, "base")
    walk = arr
    for _ in range(10):
        if walk is None:
            break
        walk = walk.base
    assert walk is None


def test_arrow_nulls_and_other_types_are_refused_naming_the_argument():
    pa = pytest.importorskip("pyarrow", reason="Arrow input needs pyarrow")
    acct = used_accountant()
    record = accountant_record(acct)
    with pytest.raises(ValueError, match=r"'counts' parameter of noisy_counts must not "
                                         r"contain nulls\..*a null at index 2"):
        dp.noisy_counts(pa.chunked_array([[1, 2], [None, 4]]), epsilon=1.0, accountant=acct)
    with pytest.raises(TypeError, match=r"'counts' parameter of noisy_counts.*pyarrow "
                                        r"StringArray"):
        dp.noisy_counts(pa.array(["a", "b"]), epsilon=1.0, accountant=acct)
    with pytest.raises(TypeError, match=r"'value' parameter of laplace_mechanism"):
        dp.laplace_mechanism(pa.array(["a", "b"]).dictionary_encode(), sensitivity=1.0,
                             epsilon=1.0, accountant=acct)
    with pytest.raises(ValueError, match=r"'values' parameter of count_categories.*null at "
                                         r"index 1"):
        dp.count_categories(pa.array(["a", None]).dictionary_encode(), ["a"], epsilon=1.0,
                            accountant=acct)
    assert accountant_record(acct) == record


def test_arrow_dictionary_encoded_categories_count_as_their_values():
    pa = pytest.importorskip("pyarrow", reason="Arrow input needs pyarrow")
    values = np.array(list("abcabcaaz"))
    chunked = pa.chunked_array([pa.array(values[:4]).dictionary_encode(),
                                pa.array(values[4:]).dictionary_encode()])
    for data in (pa.array(values).dictionary_encode(), chunked):
        got = dp.count_categories(data, ["a", "b", "c"], epsilon=1.0, other=True,
                                  accountant=dp.Accountant(), rng=3)
        want = dp.count_categories(values, ["a", "b", "c"], epsilon=1.0, other=True,
                                   accountant=dp.Accountant(), rng=3)
        np.testing.assert_array_equal(got, want)
        codes = dp.randomized_response_categorical(
            pa.array(values[:8]).dictionary_encode(), ["a", "b", "c"], epsilon=1.0,
            accountant=dp.Accountant(), rng=3)
        np.testing.assert_array_equal(codes, dp.randomized_response_categorical(
            values[:8], ["a", "b", "c"], epsilon=1.0, accountant=dp.Accountant(), rng=3))
