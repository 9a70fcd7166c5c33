"""Owned state: objects that carry a budget already charged have one owner.

A sparse-vector object or a :class:`~dpfast.PrivateMultiplicativeWeights` is paid for once,
at creation, for at most ``cutoff`` above-threshold answers (or ``updates`` updates). Every
way of getting a second object that shares the charge but not the count breaks that:

- **threads**: the kernels release the GIL, so two calls could both pass the cutoff check
  and both draw; :meth:`Owned._enter` takes a per-object lock for the whole decision (the
  check, the GIL-free kernel calls and the counters), so calls from several threads take
  turns. A call that re-enters the same object from the same thread (a query whose
  ``__array__`` calls it, a workload whose answer does) would see the state half-way
  through a decision: it is refused with ``RuntimeError`` rather than deadlocked.
- **copies**: ``copy.copy``, ``copy.deepcopy`` and pickle (any protocol, nested in any
  container) would start a fresh count and carry the private state (the noisy threshold,
  PMW's histogram): all refused with ``TypeError``.
- **forked children**: a child inherits a copy of the object and would answer ``cutoff``
  more queries, unseen by the parent. An ``os.register_at_fork`` hook marks every live
  object in the child, and every call also compares ``os.getpid()`` with the creating
  process's id (a fork through libc, e.g. ``ctypes``, runs no Python hook): the child's
  calls raise ``RuntimeError``; the parent's object goes on unchanged.

The public state of these objects (``cutoff``, ``above``, ``epsilon`` ...) is read-only
(properties over private names). Python cannot stop deliberate access to private names
(``obj._above = 0``, ``object.__reduce_ex__(obj, 2)``, ``gc.get_referents``): all of the
above protects against mistakes and ordinary use, not against hostile code running in the
same process, which can read the data directly anyway.
"""
from __future__ import annotations

import os
import threading
import weakref
from typing import NoReturn

__all__ = ["Owned"]

# A system call each time (glibc caches no pid), so it sees a fork made through libc.
_getpid = os.getpid


class Owned:
    """Mixin for an object that carries a budget already charged: one lock per object, no
    copies, no use in a forked child (see the module). Call :meth:`_own` first thing in
    ``__init__``; wrap every call that decides or changes state in ``_enter()`` /
    ``_leave()`` (``try``/``finally``)."""

    _owned_lock: threading.RLock
    _owned_busy: bool
    _owned_pid: int
    _owned_forked: bool

    def _own(self) -> None:
        """Become owned by this process (call before anything else in ``__init__``)."""
        self._owned_lock = threading.RLock()
        self._owned_busy = False          # a call holds the object (the lock is re-entrant)
        self._owned_pid = os.getpid()
        self._owned_forked = False
        _live.add(self)

    def _check_process(self) -> None:
        """Refuse use in a process other than the creating one."""
        if self._owned_forked or os.getpid() != self._owned_pid:
            self._refuse_process()

    def _refuse_process(self) -> NoReturn:
        name = type(self).__name__
        raise RuntimeError(
            f"This {name} was created in process {self._owned_pid} and cannot be used in a "
            f"forked child: the child's copy would answer again under the one charge, unseen "
            f"by the parent. Create a new {name} in the child (a new charge of epsilon).")

    def _enter(self) -> None:
        """Start a call: this process's object, and this thread's turn (other threads wait
        for theirs; the same thread re-entering is refused)."""
        # _check_process, inline: this runs on every scalar query.
        if self._owned_forked or _getpid() != self._owned_pid:
            self._refuse_process()
        lock = self._owned_lock
        lock.acquire()
        try:
            busy = self._owned_busy
            if not busy:
                self._owned_busy = True
        except BaseException:           # a signal handler raising here: the lock goes back
            lock.release()
            raise
        if busy:
            # Only the thread holding the lock can get here (RLock): a call re-entering.
            lock.release()
            name = type(self).__name__
            raise RuntimeError(
                f"This {name} is already in a call on the same thread: a query value, "
                f"index array or workload called it again while it was deciding. Convert "
                f"the queries to an array before the call.")

    def _leave(self) -> None:
        """End a call started by :meth:`_enter`."""
        try:
            self._owned_busy = False
        finally:
            self._owned_lock.release()

    def _refuse_copy(self) -> NoReturn:
        name = type(self).__name__
        raise TypeError(
            f"A {name} cannot be copied or pickled: it carries a charge already paid for a "
            f"limited number of answers, and a copy would answer again under the same charge "
            f"(and carry its private noise). Create a new {name} (a new charge of epsilon) "
            f"where another one is needed.")

    def __copy__(self) -> NoReturn:
        self._refuse_copy()

    def __deepcopy__(self, memo: object) -> NoReturn:
        self._refuse_copy()

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        self._refuse_copy()

    def __reduce__(self) -> NoReturn:
        self._refuse_copy()

    def __getstate__(self) -> NoReturn:
        self._refuse_copy()


# Every owned object alive in this process, for the fork hook.
_live: weakref.WeakSet[Owned] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for obj in list(_live):
        obj._owned_forked = True
        # The parent's lock may have been held by a thread that does not exist here.
        obj._owned_lock = threading.RLock()
        obj._owned_busy = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
