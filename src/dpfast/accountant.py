"""Privacy budget accounting.

An :class:`Accountant` holds a budget (epsilon, delta) and a ledger of spends. Mechanisms
charge it *before* they draw any noise; a charge that would exceed the budget raises
:class:`BudgetExceededError` and changes nothing.

Budget arithmetic is exact: each epsilon and delta is read as the shortest decimal that
round-trips the float (``0.1`` is one tenth) and summed as a fraction, so ten spends of 0.1
exhaust a budget of 1.0 exactly and an eleventh fails. (The mechanisms' own floating-point
effects are bounded separately; see :func:`dpfast.laplace_privacy_loss`.)

Composition implemented here is sequential (epsilons add, deltas add). Spends are recorded
as ledger entries so that parallel, group and advanced composition can be layered on top.
"""
import contextvars
import math
import threading
from fractions import Fraction

from . import validation as _v

__all__ = ["Accountant", "BudgetExceededError", "default_accountant"]


class BudgetExceededError(ValueError):
    """A spend would take an accountant past its budget; nothing was spent."""


def _exact(x):
    """The float as the decimal it prints as, exactly; math.inf stays infinite."""
    return x if math.isinf(x) else Fraction(repr(float(x)))


def _float(x):
    return x if isinstance(x, float) else float(x)


class Accountant:
    """Accountant(epsilon=inf, delta=0.0)

    A privacy budget and the record of what has been spent from it.

    Parameters
    ----------
    epsilon : float, optional
        Total epsilon budget, > 0. ``float('inf')`` (the default) means unlimited: spends are
        still recorded.
    delta : float, optional
        Total delta budget, in [0, 1]. Default 0 (pure differential privacy).

    Notes
    -----
    Thread-safe: checking and recording a spend is one atomic step. ``with acct:`` makes
    ``acct`` the default accountant for mechanisms called with ``accountant=None`` inside the
    block (per thread / asyncio task, via :mod:`contextvars`; a thread started inside the
    block does not inherit it, so pass ``accountant=`` explicitly there).

    Examples
    --------
    >>> import dpfast as dp
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> for _ in range(10):
    ...     acct.spend(0.1)
    >>> acct.spent
    (1.0, 0.0)
    >>> acct.spend(0.1)
    Traceback (most recent call last):
    ...
    dpfast.accountant.BudgetExceededError: ...
    """

    def __init__(self, epsilon=math.inf, delta=0.0):
        if isinstance(epsilon, float) and math.isinf(epsilon) and epsilon > 0:
            eps = math.inf
        else:
            eps = _v.check_epsilon(epsilon, "Accountant")
        dlt = _v.check_real(delta, "delta", "Accountant", low=0.0, high=1.0,
                            low_open=False, high_open=False)
        self._budget = (_exact(eps), _exact(dlt))
        self._spent = (Fraction(0), Fraction(0))
        self._ledger = []
        self._lock = threading.Lock()

    # -- queries ---------------------------------------------------------------------
    @property
    def epsilon(self):
        """The epsilon budget."""
        return _float(self._budget[0])

    @property
    def delta(self):
        """The delta budget."""
        return _float(self._budget[1])

    @property
    def spent(self):
        """(epsilon, delta) spent so far."""
        with self._lock:
            return _float(self._spent[0]), _float(self._spent[1])

    @property
    def remaining(self):
        """(epsilon, delta) still available."""
        with self._lock:
            return (_float(self._budget[0] - self._spent[0]),
                    _float(self._budget[1] - self._spent[1]))

    @property
    def ledger(self):
        """List of (epsilon, delta, label) for every spend, in order."""
        with self._lock:
            return list(self._ledger)

    def __len__(self):
        with self._lock:
            return len(self._ledger)

    def __repr__(self):
        eps, dlt = self.spent
        return (f"Accountant(epsilon={self.epsilon!r}, delta={self.delta!r}; "
                f"spent=({eps!r}, {dlt!r}) over {len(self)} spends)")

    # -- spending --------------------------------------------------------------------
    def check(self, epsilon, delta=0.0):
        """True if a spend of (epsilon, delta) would fit in the remaining budget."""
        e = _exact(_v.check_epsilon(epsilon, "Accountant.check"))
        d = _exact(_v.check_delta(delta, "Accountant.check"))
        with self._lock:
            return self._fits(e, d)

    def _fits(self, e, d):
        return self._spent[0] + e <= self._budget[0] and self._spent[1] + d <= self._budget[1]

    def spend(self, epsilon, delta=0.0, *, label=None):
        """Charge (epsilon, delta) to the budget, or raise and charge nothing.

        Raises
        ------
        BudgetExceededError
            If the spend does not fit; the message gives what remains and how to proceed.
        TypeError, ValueError
            If epsilon or delta is not a valid privacy parameter.
        """
        e = _exact(_v.check_epsilon(epsilon, "Accountant.spend"))
        d = _exact(_v.check_delta(delta, "Accountant.spend"))
        with self._lock:
            if not self._fits(e, d):
                rem_e = _float(self._budget[0] - self._spent[0])
                rem_d = _float(self._budget[1] - self._spent[1])
                raise BudgetExceededError(
                    f"Privacy budget exceeded: spending (epsilon={float(epsilon)!r}, "
                    f"delta={float(delta)!r}) needs more than the remaining "
                    f"(epsilon={rem_e!r}, delta={rem_d!r}) of a budget of "
                    f"(epsilon={self.epsilon!r}, delta={self.delta!r}). Nothing was spent; "
                    "use a smaller epsilon/delta or a new Accountant with a larger budget.")
            self._spent = (self._spent[0] + e, self._spent[1] + d)
            self._ledger.append((float(epsilon), float(delta), label))

    # -- default-accountant context --------------------------------------------------
    def __enter__(self):
        _stack.set(_stack.get() + (self,))
        return self

    def __exit__(self, *exc):
        stack = _stack.get()
        if not stack or stack[-1] is not self:
            raise RuntimeError("Accountant context exited out of order.")
        _stack.set(stack[:-1])
        return False


_stack = contextvars.ContextVar("dpfast_accountant_stack", default=())
_process_default = Accountant()


def default_accountant():
    """The accountant that mechanisms charge when called with ``accountant=None``.

    Inside ``with acct:`` that is ``acct``; otherwise a process-wide accountant with an
    unlimited budget that records every spend.
    """
    stack = _stack.get()
    return stack[-1] if stack else _process_default


def resolve_accountant(accountant, func):
    """``accountant`` itself, or the default one for ``None``; TypeError for anything else."""
    if accountant is None:
        return default_accountant()
    if not isinstance(accountant, Accountant):
        raise TypeError(f"The 'accountant' parameter of {func} must be a dpfast.Accountant "
                        f"or None. Got {accountant!r} instead.")
    return accountant
