"""The release path: how every mechanism and sampler reaches a kernel.

Every release moves through three phases, in this order and once each:

1. *check* -- the mechanism checks its arguments and data, and builds a :class:`Release`,
   which resolves and checks the accountant, the generator and the thread count. Nothing is
   charged or drawn; anything that can fail for bad input, a missing file permission or an
   unpayable budget fails here (:meth:`Release.affordable` asks the budget without paying).
2. *charge* -- :meth:`Release.charge` spends the release's cost (durably, with a ledger) and
   only then hands out the release's key: 256 bits drawn from the generator, the only
   randomness of the release (cell-addressed noise: any piece of the release is a function
   of the key and the cells' positions). A release is charged at most once; a resumed
   release (an interrupted file release, under its journal's key) is charged through
   :meth:`Release.charge_resumed`, which pays unless the ledger proves the interrupted
   charge paid for that very key.
3. *draw* -- the kernels draw under that key, and the mechanism post-processes. A release
   that draws several times (an interactive object's queries, MWEM's rounds) is handed a
   :class:`Keys` stream by its charge instead: each draw takes the stream's next key.

The noise layer (:mod:`dpfast.noise`) draws only under a :class:`dpfast._native.Key`, and
keys are made here, after a charge (:meth:`Release.charge`, :func:`release`) or for a raw
sampler, which charges nothing by contract (:func:`draw`). A kernel given a key draws
exactly what it drew given the generator the key came from (a kernel call takes one key from
its generator), so this changed no output.

:func:`release` is the same three phases for a release made of one kernel call, written out
inline because small calls are dominated by such overheads. No code outside this module
calls ``spend``. A :class:`Release` carries a key: it is owned state, thread-safe, and
refuses ``copy``, ``deepcopy`` and pickle.

A mechanism checks all of its arguments (the data, its privacy parameters, any ``out=``
array: dtype, byte order, shape, writability), allocates its output, and hands one kernel
call to :func:`release`. That resolves the accountant, the generator and the thread count
(checking each), charges the accountant, and makes the call. The charge is the last step
before the kernel draws, and a kernel is only ever given checked arguments, so a call that
fails for bad input costs neither budget nor randomness; a call refused by the budget draws
nothing. Raw samplers, which charge nothing, use :func:`draw`, the same path without the
charge.

A kernel is called as ``kernel(generator, threads, *args)``: a ``dpfast._native`` function
(which draws the call's key from the generator and hands its chunks to the one driver), or,
for a release made of several kernel calls, a Python function with the same signature.
"""
from __future__ import annotations

import hashlib
import os
import threading
from typing import TYPE_CHECKING

from . import _native
from ._native import CHUNK, ChaCha20
from .accounting import Accountant, AccountantLike, BudgetExceededError, resolve_accountant
from .rng import resolve_rng, resolve_threads

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    from .rng import RngLike

    _T = TypeVar("_T")

__all__ = ["Release", "Keys", "draw", "release", "sampler_keys", "key_digest", "ledger_path",
           "refuse_unaffordable"]


class Keys:
    """The keys of one charged release that draws several times: :meth:`next` is a fresh
    key from the release's generator (what a kernel call given that generator would have
    taken). Made only after the release's charge; owned by the object that made the
    release (it refuses copy and pickle)."""

    __slots__ = ("_generator", "_first")

    def __init__(self, generator: ChaCha20, first: _native.Key | None = None) -> None:
        self._generator = generator
        self._first = first

    def next(self) -> _native.Key:
        """The next key of the release (``first``, if given, before any other)."""
        if self._first is not None:
            key, self._first = self._first, None
            return key
        return _native.Key(self._generator)

    def coins(self) -> ChaCha20:
        """The generator itself, for randomized response's coins (uniforms and integers that
        are not noise: they decide which answer a respondent gives)."""
        return self._generator

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("A dpfast release's keys are not copied or pickled.")

    def __copy__(self) -> Keys:
        raise TypeError("A dpfast release's keys are not copied or pickled.")

    def __deepcopy__(self, memo: object) -> Keys:
        raise TypeError("A dpfast release's keys are not copied or pickled.")


class Release:
    """One release of the mechanism ``func`` costing (``epsilon``, ``delta``) and, where
    stated, ``rho`` (its zCDP cost; ``epsilon`` None for a release given in rho alone): the
    accountant (None: the default one), the generator (``rng``) and the thread count (for
    ``size`` elements drawn) resolved and checked at construction, before anything is
    charged. :meth:`affordable` also finds a cost this accountant cannot take at all (rho
    alone on an (epsilon, delta) accountant): ValueError, nothing charged."""

    __slots__ = ("func", "epsilon", "delta", "rho", "accountant", "generator", "threads",
                 "_key", "_lock")

    def __init__(self, func: str, accountant: AccountantLike | None, epsilon: float | None,
                 delta: float, rng: RngLike, threads: int | None = None,
                 size: int | None = None, rho: float | None = None) -> None:
        self.func = func
        self.epsilon = epsilon
        self.delta = delta
        self.rho = rho
        self.accountant = resolve_accountant(accountant, func)
        self.generator = resolve_rng(rng, func)
        self.threads = resolve_threads(threads, func, size)
        self._key: _native.Key | None = None
        self._lock = threading.Lock()       # one charge, one key, whatever the threads

    def affordable(self) -> bool:
        """Whether the accountant can pay for the release now (nothing is spent)."""
        return self.accountant.check(self.epsilon, self.delta, rho=self.rho)

    @property
    def charged(self) -> bool:
        return self._key is not None

    def charge(self, label: str | None = None, *, commit: bool = False) -> _native.Key:
        """Spend the release's cost, then draw and return its key (raises
        :class:`dpfast.BudgetExceededError`, drawing nothing, if the budget cannot pay).

        With ``commit``, and an :class:`dpfast.Accountant` (not a block or a lease), the
        charge records a digest of the key it hands out (a one-way function of the key: it
        reveals nothing of the noise) in a detail no label can set, so that a resumed
        release can prove from the ledger that this charge paid for its key, once
        (:meth:`charge_resumed`). The digest is of the key the generator will give; if
        another thread draws from the generator in between, the key differs, the commitment
        is void and a resume is charged again (never less)."""
        with self._lock:
            self._before_charge()
            text = label or self.func
            if commit and type(self.accountant) is Accountant:
                peek = _native.ChaCha20(0)
                peek.state = self.generator.state       # the same stream, not advanced
                self.accountant._spend_at(None, self.epsilon, self.delta, text, self.rho,
                                          key_digest(bytes(_native.Key(peek))))
            else:
                self.accountant.spend(self.epsilon, self.delta, rho=self.rho, label=text)
            self._key = _native.Key(self.generator)
            return self._key

    def charge_keys(self, label: str | None = None) -> Keys:
        """:meth:`charge`, for a release that draws several times (a statistic of records:
        the rows each person keeps, then the noise of each of its parts): a :class:`Keys`
        stream whose first key is the one :meth:`charge` hands out."""
        first = self.charge(label)
        return Keys(self.generator, first)

    def charge_resumed(self, key: bytes, charged_in: str | None) -> _native.Key:
        """The key of an interrupted release being completed (``key``, from its journal),
        after paying for it -- unless its charge provably stands, and is used once: made in
        the durable ledger ``charged_in``, which is this release's ledger, by :meth:`charge`
        with ``commit`` for this very key at the same cost, and not yet redeemed by another
        completion (:meth:`dpfast.Accountant._redeem`, which records this one). A journal
        written by hand, naming the ledger and a key of its author's choosing, finds no
        such charge and pays; so does a second completion under one key."""
        with self._lock:
            self._before_charge()
            root = self.accountant if isinstance(self.accountant, Accountant) \
                else self.accountant._acct
            label = f"{self.func} (completing an interrupted release)"
            if not (charged_in is not None and charged_in == ledger_path(self.accountant)
                    and root._redeem(key_digest(key), (self.epsilon, self.delta, self.rho),
                                     f"{label}: its committed charge stands")):
                self.accountant.spend(self.epsilon, self.delta, rho=self.rho, label=label)
            self._key = _native.Key.from_bytes(key)
            return self._key

    @property
    def key(self) -> _native.Key:
        """The key handed out by the charge (RuntimeError before it)."""
        if self._key is None:
            raise RuntimeError(f"{self.func}: a release's key exists only after its charge.")
        return self._key

    def _before_charge(self) -> None:
        if self._key is not None:
            raise RuntimeError(f"{self.func}: a release is charged once.")

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("A dpfast release holds its key and is not copied or pickled.")

    def __copy__(self) -> Release:
        raise TypeError("A dpfast release holds its key and is not copied or pickled.")

    def __deepcopy__(self, memo: object) -> Release:
        raise TypeError("A dpfast release holds its key and is not copied or pickled.")


def key_digest(key: bytes) -> str:
    """A one-way digest of a release's key (32 hex digits): what a ledger records of it."""
    return hashlib.blake2b(key, digest_size=16, person=b"dpfast-release").hexdigest()


def ledger_path(accountant: AccountantLike) -> str | None:
    """The real path of the durable ledger behind ``accountant`` (None: in memory)."""
    root = accountant if isinstance(accountant, Accountant) else accountant._acct
    return os.path.realpath(root.ledger_path) if root.ledger_path is not None else None


def draw(func: str, rng: RngLike, threads: int | None, size: int,
         kernel: Callable[..., _T], *args: object) -> _T:
    """``kernel(key, threads, *args)`` for a sampler named ``func`` drawing ``size``
    elements (a raw sampler charges nothing, by contract): ``rng`` and ``threads`` resolved
    and checked first, then one key drawn from the generator."""
    gen = resolve_rng(rng, func)
    nthreads = resolve_threads(threads, func, size)
    return kernel(_native.Key(gen), nthreads, *args)


def sampler_keys(func: str, rng: RngLike) -> Keys:
    """A :class:`Keys` stream for a sampler named ``func`` that draws several times and
    charges nothing, by contract (an auditor's runs: :func:`dpfast.mechanisms.sparse_vector.
    sample_runs`)."""
    return Keys(resolve_rng(rng, func))


def release(func: str, accountant: AccountantLike | None, epsilon: float | None,
            delta: float, rng: RngLike, threads: int | None, size: int,
            kernel: Callable[..., _T], *args: object, rho: float | None = None,
            keys: bool = False) -> _T:
    """Charge (``epsilon``, ``delta``) (stating ``rho``, the zCDP cost, where known; see
    :meth:`dpfast.Accountant.spend`) to ``accountant`` (None: the default one), then return
    ``kernel(key, threads, *args)``, ``key`` the release's key drawn after the charge (with
    ``keys``, a :class:`Keys` stream instead, for a kernel that draws several times).

    Every argument of the mechanism ``func`` must already be checked and its output
    allocated: after the charge nothing may fail for bad input. ``size`` is the number of
    elements drawn (calls of at most one chunk run on the calling thread).
    """
    # The resolve_* functions, with the common cases decided inline: this is on every
    # release's path, and small releases are dominated by such overheads.
    acct = accountant if type(accountant) is Accountant else \
        resolve_accountant(accountant, func)
    gen = rng if type(rng) is ChaCha20 else resolve_rng(rng, func)
    nthreads = 1 if threads is None and size <= CHUNK else resolve_threads(threads, func, size)
    if rho is None:
        acct.spend(epsilon, delta, label=func)
    else:
        acct.spend(epsilon, delta, rho=rho, label=func)
    return kernel(Keys(gen) if keys else _native.Key(gen), nthreads, *args)


def refuse_unaffordable(rel: Release, where: str) -> None:
    """Refuse a release the budget cannot pay before anything is read (ValueError for a
    cost this accountant cannot take at all: rho alone on an (epsilon, delta) budget);
    ``where``: the module named in the message."""
    if not rel.affordable():
        cost = f"epsilon={rel.epsilon!r}" if rel.rho is None else \
            f"rho={rel.rho!r}" if rel.epsilon is None else \
            f"epsilon={rel.epsilon!r}, delta={rel.delta!r} (rho={rel.rho!r})"
        raise BudgetExceededError(f"{where}.{rel.func} needs {cost}, more than the "
                                  f"accountant has left; nothing was read, spent or drawn.")
