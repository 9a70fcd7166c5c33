"""dpfast's compiled layer: the ChaCha20 generator and every kernel, in one extension module.

Design note: one extension module, not several sharing a ``.pxd``. The keystream, its
instruction-set switch and the thread pool are process-wide state; compiled into one shared
object there is exactly one copy of each by construction, and forcing the instruction set
(``set_simd_impl``) changes what every sampler runs. Several modules would each link their
own copy unless the cipher were exported through a C-level table (numpy's ``bitgen_t``
capsules), a versioned interface between shared objects that buys nothing here: dpfast's
kernels are all built together and never loaded separately.

Layout of this file: C declarations; the instruction set and threads; the ``ChaCha20``
BitGenerator and per-call keys; sampling kernels; selection kernels; counting kernels; test
shims. Each kernel wrapper fills a task struct and hands it to the one driver, ``dpf_run``
(``_core/driver.h``), which runs the task's chunks on the calling thread or on a pool.

Kernels are called as ``kernel(source, threads, *arguments)`` (the convention of
``dpfast._release``). ``source`` is a ``ChaCha20`` or a :class:`Key`. From a generator it
draws a fresh 256-bit key (four words of its stream) for this call alone, and chunk ``c`` of
the output reads the ChaCha20 streams of nonces ``2(chunk0 + c)`` and ``2(chunk0 + c) + 1``
under that key: the output is the same whatever the number of threads. A ``Key`` drawn once
lets a release made block by block (``chunk0`` numbering the blocks' chunks) equal one made in
a single call.
"""
import os
import weakref

import numpy as np

cimport numpy as cnp
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.pythread cimport (NOWAIT_LOCK, WAIT_LOCK, PyThread_acquire_lock,
                               PyThread_allocate_lock, PyThread_free_lock,
                               PyThread_release_lock, PyThread_type_lock)
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.math cimport INFINITY
from libc.string cimport memcpy
from numpy.random cimport BitGenerator

cnp.import_array()

# -- C declarations ----------------------------------------------------------------------------

cdef extern from "simd.h":
    int dpf_simd_level() nogil
    const char *dpf_simd_name()
    int dpf_simd_set(const char *name)

cdef extern from "driver.h":
    ctypedef void (*dpf_chunk_fn)(void *task, int64_t chunk, int slot) noexcept nogil
    void dpf_run(dpf_chunk_fn fn, void *task, int64_t nchunks, int threads) nogil
    int dpf_have_threads()

cdef extern from "chacha20.h":
    enum: DPF_CHACHA_BUF_WORDS
    ctypedef struct dpf_chacha_t:
        uint64_t buf[DPF_CHACHA_BUF_WORDS]
        uint32_t key[8]
        uint64_t counter
        uint64_t nonce
        int pos
        int has_uint32
        uint32_t uinteger
    void dpf_chacha_init(dpf_chacha_t *st, const uint32_t *key, uint64_t counter,
                         uint64_t nonce) nogil
    void dpf_chacha_refill(dpf_chacha_t *st) nogil
    void dpf_chacha_fill(dpf_chacha_t *st, uint64_t *out, size_t n) nogil
    uint64_t dpf_chacha_next64(dpf_chacha_t *st) nogil

cdef extern from "sampling.h":
    enum: DPF_CHUNK
    enum: DPF_MAX_EXTRA_WORDS
    enum dpf_mode:
        DPF_MODE_UNIFORM
        DPF_MODE_DLAP_INT
        DPF_MODE_DLAP_GRID
        DPF_MODE_DLAP_I32
    enum:
        DPF_NOISE_LAPLACE
        DPF_NOISE_EXPONENTIAL
        DPF_NOISE_GUMBEL
    enum:
        DPF_F64
        DPF_F32
        DPF_I64
        DPF_I32
    ctypedef struct dpf_dlap_params:
        double t
        double c
        double a_hi
        double a_lo
    ctypedef struct dpf_fill_task:
        uint32_t key[8]
        int mode
        dpf_dlap_params lap
        double g
        double ginv
        const void *base
        void *out
        int64_t n
        uint64_t chunk0
    ctypedef struct dpf_dgauss_task:
        uint32_t key[8]
        int m
        int r
        int narrow
        int abits
        int fbits
        int jbits
        int lbits
        uint64_t jmask
        uint64_t lmask
        double cq[4]
        double dq[3]
        double Mq
        double M
        double s
        double inv_s
        double cv
        int kind
        double g
        double ginv
        const void *base
        void *out
        int64_t n
        uint64_t chunk0
    ctypedef struct dpf_select_task:
        uint32_t key[8]
        int noise
        double umax
        double inv_scale
        const void *u
        int utype
        int64_t n
        int64_t *best_idx
        double *best_val
        int64_t k
        double *heap_val
        int64_t *heap_idx
        int64_t *heap_len
    ctypedef struct dpf_sum_exp_task:
        const void *u
        int utype
        int64_t n
        double umax
        double a
        double *sums
    void dpf_dlap_params_init(dpf_dlap_params *p, double t) nogil
    void dpf_fill_chunk(void *task, int64_t chunk, int slot) noexcept nogil
    void dpf_dgauss_params(dpf_dgauss_task *task, double sigma) nogil
    void dpf_dgauss_choose(double sigma, int *m, int *r) nogil
    void dpf_dgauss_setup(dpf_dgauss_task *task, double sigma, int m, int r) nogil
    void dpf_dgauss_chunk(void *task, int64_t chunk, int slot) noexcept nogil
    double dpf_dgauss_efficiency(double sigma, int m, int r) nogil
    double dpf_dgauss_accept_prob(const dpf_dgauss_task *task, double g, double v) nogil
    enum:
        DPF_DG_I64
        DPF_DG_GRID
        DPF_DG_I32
    void dpf_select_chunk(void *task, int64_t chunk, int slot) noexcept nogil
    void dpf_sum_exp_chunk(void *task, int64_t chunk, int slot) noexcept nogil
    int64_t dpf_find_exp(const void *u, int utype, int64_t lo, int64_t n, double umax,
                         double a, double v) nogil
    void dpf_value_range(const void *x, int dtype, size_t n, double *flo, double *fhi,
                         int64_t *ilo, int64_t *ihi) nogil
    double dpf_select_noise_from_bits(uint64_t w, uint64_t n0, int kind) nogil
    double dpf_exp_nonpos_shim(double x) nogil
    double dpf_dlap_from_bits(uint64_t w, uint64_t n0, const dpf_dlap_params *p) nogil
    double dpf_uniform_from_bits(uint64_t w, uint64_t n0) nogil
    void dpf_dlap_z_from_bits(uint64_t w, uint64_t n0, const dpf_dlap_params *p, double *fb,
                              double *rest) nogil

cdef extern from "counting.h":
    ctypedef struct dpf_axis:
        pass
    enum:
        DPF_AXIS_SEARCH
        DPF_AXIS_UNIFORM
        DPF_AXIS_INTEGER
    enum dpf_rec:
        DPF_REC_F64
        DPF_REC_F32
        DPF_REC_I64
        DPF_REC_I32
        DPF_REC_I16
        DPF_REC_I8
        DPF_REC_U32
        DPF_REC_U16
        DPF_REC_U8
        DPF_REC_ND
        DPF_REC_CODES
    ctypedef struct dpf_count_task:
        const void *data
        int rtype
        int64_t n
        int64_t d
        const dpf_axis *axes
        const int64_t *strides
        int64_t ncells
        int64_t nblocks
        int64_t *tables
        int64_t row
        int64_t *counts
        int atomic
    void dpf_axis_init(dpf_axis *ax, const double *edges, int64_t nbins, int kind) nogil
    void dpf_count_block(void *task, int64_t block, int slot) noexcept nogil
    uint64_t dpf_checksum(const void *data, size_t n, uint64_t seed) nogil


CHUNK = DPF_CHUNK
MAX_EXTRA_WORDS = DPF_MAX_EXTRA_WORDS
NOISE_LAPLACE = DPF_NOISE_LAPLACE
NOISE_EXPONENTIAL = DPF_NOISE_EXPONENTIAL
NOISE_GUMBEL = DPF_NOISE_GUMBEL
AXIS_SEARCH = DPF_AXIS_SEARCH
AXIS_UNIFORM = DPF_AXIS_UNIFORM
AXIS_INTEGER = DPF_AXIS_INTEGER

# Calls on more elements than this release the GIL (below it, releasing costs more than the
# call); numpy's own threshold.
DEF NOGIL_MIN = 500

# -- instruction set and threads ----------------------------------------------------------


def simd_impl():
    """The instruction set the keystream and the samplers use: 'avx512', 'avx2' or 'scalar'."""
    return dpf_simd_name().decode()


def set_simd_impl(name):
    """Use 'avx512', 'avx2', 'scalar' or 'auto' for the keystream and every sampler; True if
    this CPU can run it (and it is now in use), False otherwise. Outputs are the same on every
    instruction set; this is for tests and benchmarks."""
    return bool(dpf_simd_set(name.encode()))


def have_threads():
    """True if calls with threads > 1 can run on several threads."""
    return bool(dpf_have_threads())


# -- the ChaCha20 generator -----------------------------------------------------------------

DEF MASK64 = 0xFFFFFFFFFFFFFFFF


cdef uint64_t _next_uint64(void *st) noexcept nogil:
    return dpf_chacha_next64(<dpf_chacha_t *>st)


cdef uint32_t _next_uint32(void *st) noexcept nogil:
    cdef dpf_chacha_t *s = <dpf_chacha_t *>st
    cdef uint64_t v
    if s.has_uint32:
        s.has_uint32 = 0
        return s.uinteger
    v = dpf_chacha_next64(s)
    s.has_uint32 = 1
    s.uinteger = <uint32_t>(v >> 32)
    return <uint32_t>v


cdef double _next_double(void *st) noexcept nogil:
    return <double>(dpf_chacha_next64(<dpf_chacha_t *>st) >> 11) * (1.0 / 9007199254740992.0)


def _as_bytes(value, name, size):
    if isinstance(value, (bytes, bytearray, memoryview)):
        b = bytes(value)
    elif isinstance(value, np.ndarray) and value.dtype == np.uint8:
        b = value.tobytes()
    else:
        raise TypeError(f"The {name!r} parameter of ChaCha20 must be {size} bytes. "
                        f"Got {type(value).__name__} instead.")
    if len(b) != size:
        raise ValueError(f"The {name!r} parameter of ChaCha20 must be {size} bytes. "
                         f"Got {len(b)} bytes instead.")
    return b


# Generators keyed from os.urandom (and the children they spawn); a forked child re-keys them,
# so that parent and child never emit the same keystream (seeded generators are reproducible
# on purpose and are left alone).
_os_keyed = weakref.WeakSet()


def _rekey_after_fork():
    for g in list(_os_keyed):
        (<ChaCha20>g)._rekey_from_os()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_rekey_after_fork)


cdef class ChaCha20(BitGenerator):
    """ChaCha20(seed=None, *, key=None, nonce=None, counter=0)

    Cryptographically secure bit generator: the ChaCha20 stream cipher of RFC 8439.

    Parameters
    ----------
    seed : None, int, array_like or numpy.random.SeedSequence, optional
        ``None`` (the default) keys the cipher with 32 bytes from ``os.urandom``: use this for
        real releases. Anything else goes through ``numpy.random.SeedSequence``, whose output
        becomes the 256-bit key; use it for tests and reproducible research only.
    key : bytes of length 32, optional
        Set the cipher key directly (exclusive with ``seed``).
    nonce : bytes of length 12, optional
        The RFC 8439 96-bit nonce (default all zero).
    counter : int, optional
        The RFC 8439 initial 32-bit block counter (default 0).

    Raises
    ------
    ValueError
        If both ``seed`` and ``key`` are given; if ``key`` is not 32 bytes or ``nonce`` not 12
        bytes long; if ``counter`` is outside ``[0, 2**32)``; if ``seed`` is a negative int.
    TypeError
        If ``seed`` is not None, a non-negative int, a sequence of them or a
        ``numpy.random.SeedSequence`` (the message names its type, never its value: a seed is
        a key); if ``key`` or ``nonce`` is not bytes-like; if ``counter`` is not an int.

    Notes
    -----
    ``random_raw`` yields the keystream read as little-endian uint64 words, so with
    ``key``, ``nonce`` and ``counter`` set it reproduces the RFC 8439 test vectors. The block
    counter is 64 bits wide (state words 12 and 13): it agrees with RFC 8439 for the first
    2^32 blocks and then carries into the first nonce word instead of wrapping, so a stream
    never repeats (2^64 blocks of 64 bytes).

    The first 4 bytes of an RFC ``nonce`` are the high half of that 64-bit counter, so two
    generators whose nonces differ only there overlap after 2^32 blocks (256 GiB); separate
    streams by the last 8 bytes, as ``spawn`` does.

    ``spawn(n)`` returns generators under the same key, each with a 64-bit nonce (state words
    14 and 15) drawn from this generator's keystream, and counter 0. A stream's nonce thus
    depends on its whole spawn history and on nothing that copies of the parent (pickles,
    forked processes) share with other streams; two of N spawned streams share a nonce with
    probability below N^2 / 2^65 (3e-8 for a million streams).

    An OS-keyed generator (``seed=None``, no ``key``), and every generator it spawns, never
    shares its keystream with another process or copy: it is re-keyed from ``os.urandom`` in
    a child process after ``fork()`` (discarding buffered keystream), and a pickled or copied
    one arrives as a new OS-keyed generator (so a generator sent to pool workers gives each
    its own noise). A seeded or keyed generator is copied, pickled and forked as it is: its
    point is to repeat. Setting ``state`` makes a generator a reproducible one.

    Examples
    --------
    >>> import numpy as np, dpfast as dp
    >>> g = np.random.Generator(dp.ChaCha20(seed=1))
    >>> 0.0 <= g.random() < 1.0
    True
    >>> k = bytes(range(32)); n = bytes.fromhex("000000090000004a00000000")
    >>> hex(int(dp.ChaCha20(key=k, nonce=n, counter=1).random_raw()))
    '0x15593bd1e4e7f110'
    """
    cdef dpf_chacha_t *rng_state
    cdef void *_raw
    cdef bint _from_os
    cdef object __weakref__

    def __cinit__(self, *args, **kwargs):
        # The state type is declared 64-byte aligned, so the compiler may use aligned
        # vector moves on it: honour that rather than trust the allocator.
        self._raw = PyMem_Malloc(sizeof(dpf_chacha_t) + 64)
        if self._raw == NULL:
            raise MemoryError()
        self.rng_state = <dpf_chacha_t *>((<size_t>self._raw + 63) & ~(<size_t>63))

    def __dealloc__(self):
        if self._raw != NULL:
            PyMem_Free(self._raw)
            self._raw = NULL
            self.rng_state = NULL

    def __init__(self, seed=None, *, key=None, nonce=None, counter=0):
        if seed is not None and key is not None:
            raise ValueError("ChaCha20 takes either 'seed' or 'key', not both.")
        refused = None
        try:
            BitGenerator.__init__(self, seed)
        except (TypeError, ValueError) as exc:
            refused = type(exc)
        if refused is not None:
            # Raised outside the handler: numpy's message prints the seed, and a seed is a
            # key (whoever knows it can remove the noise).
            raise refused("The 'seed' parameter of ChaCha20 must be None, a non-negative "
                          "int, a sequence of them or a numpy.random.SeedSequence. Got a "
                          f"value of type {type(seed).__name__} instead.")
        if key is not None:
            words = np.frombuffer(_as_bytes(key, "key", 32), dtype="<u4").astype(np.uint32)
        elif seed is None:
            words = np.frombuffer(os.urandom(32), dtype="<u4").astype(np.uint32)
            self._mark_os_keyed()
        else:
            words = self._seed_seq.generate_state(8, np.uint32)
        n = _as_bytes(nonce, "nonce", 12) if nonce is not None else bytes(12)
        if isinstance(counter, bool) or not isinstance(counter, (int, np.integer)):
            raise TypeError("The 'counter' parameter of ChaCha20 must be an int in "
                            f"[0, 2**32). Got {counter!r} instead.")
        if not 0 <= counter < 2**32:
            raise ValueError("The 'counter' parameter of ChaCha20 must be an int in "
                             f"[0, 2**32). Got {counter!r} instead.")
        n0, n1, n2 = (int.from_bytes(n[i:i + 4], "little") for i in (0, 4, 8))
        self._setup(words, int(counter) | (n0 << 32), n1 | (n2 << 32))

    def _mark_os_keyed(self):
        self._from_os = True
        _os_keyed.add(self)

    @property
    def os_keyed(self):
        """True for a generator keyed from ``os.urandom`` (or spawned from one): re-keyed
        after ``fork()``, and new when pickled or copied."""
        return bool(self._from_os)

    def __reduce__(self):
        # An OS-keyed generator's copy is a new OS-keyed generator: two processes (or two
        # copies) holding the same keystream would draw the same noise.
        if self._from_os:
            return (ChaCha20, ())
        return BitGenerator.__reduce__(self)

    def _rekey_from_os(self):
        words = np.frombuffer(os.urandom(32), dtype="<u4").astype(np.uint32)
        self._setup(words, self.rng_state.counter, self.rng_state.nonce)

    cdef _setup(self, key_words, uint64_t counter, uint64_t nonce):
        cdef uint32_t k[8]
        for i in range(8):
            k[i] = int(key_words[i])
        dpf_chacha_init(self.rng_state, k, counter, nonce)
        self._bitgen.state = <void *>self.rng_state
        self._bitgen.next_uint64 = &_next_uint64
        self._bitgen.next_uint32 = &_next_uint32
        self._bitgen.next_double = &_next_double
        self._bitgen.next_raw = &_next_uint64

    cdef int draw_key(self, uint32_t *key) except -1:
        """A fresh 256-bit key for one kernel call: the next four words of this stream, each
        as its low and high 32-bit halves."""
        cdef uint64_t w[4]
        cdef int i
        lock = self.lock
        lock.acquire()              # not `with`: this is on every release's path
        try:
            dpf_chacha_fill(self.rng_state, w, 4)
        finally:
            lock.release()
        for i in range(4):
            key[2 * i] = <uint32_t>w[i]
            key[2 * i + 1] = <uint32_t>(w[i] >> 32)
        return 0

    @property
    def key(self):
        """The 32-byte cipher key."""
        return np.array([self.rng_state.key[i] for i in range(8)], dtype="<u4").tobytes()

    def spawn(self, int n_children):
        """spawn(n_children)

        Independent child generators: same key, nonces drawn from this stream, counter 0.
        """
        if n_children < 0:
            raise ValueError(f"n_children must be >= 0. Got {n_children} instead.")
        key_words = [self.rng_state.key[i] for i in range(8)]
        nonces = self.random_raw(n_children)
        children = []
        for nonce in nonces:
            child = ChaCha20.__new__(ChaCha20)
            BitGenerator.__init__(child, 0)
            (<ChaCha20>child)._setup(key_words, 0, int(nonce))
            if self._from_os:
                child._mark_os_keyed()
            children.append(child)
        return children

    def random_raw(self, size=None, output=True):
        """random_raw(size=None, output=True)

        The next keystream words as uint64 (little-endian reading of the RFC 8439 bytes).
        """
        cdef cnp.ndarray arr
        cdef size_t n
        if size is None:
            with self.lock:
                value = dpf_chacha_next64(self.rng_state)
            return value if output else None
        arr = np.empty(size, dtype=np.uint64)
        n = arr.size
        with self.lock, nogil:
            dpf_chacha_fill(self.rng_state, <uint64_t *>cnp.PyArray_DATA(arr), n)
        return arr if output else None

    @property
    def state(self):
        """Dict that fully describes the generator position (for pickling and restore)."""
        s = self.rng_state
        return {
            "bit_generator": type(self).__name__,
            "state": {
                "key": np.array([s.key[i] for i in range(8)], dtype=np.uint32),
                "counter": int(s.counter),
                "nonce": int(s.nonce),
            },
            "buffer_pos": int(s.pos),
            "has_uint32": int(s.has_uint32),
            "uinteger": int(s.uinteger),
        }

    @state.setter
    def state(self, value):
        if not isinstance(value, dict) or value.get("bit_generator") != type(self).__name__:
            raise ValueError(f"state must be a dict for {type(self).__name__}.")
        try:
            st = value["state"]
            key = np.asarray(st["key"])
            counter, nonce = int(st["counter"]), int(st["nonce"])
            pos, has32 = int(value["buffer_pos"]), int(value["has_uint32"])
            uinteger = int(value["uinteger"])
        except (KeyError, TypeError) as err:
            raise ValueError(f"incomplete or malformed ChaCha20 state: {err!r}") from None
        if key.shape != (8,) or key.dtype.kind not in "iu" or (key < 0).any() \
                or (key > 0xFFFFFFFF).any():
            raise ValueError("state['state']['key'] must be 8 uint32 words.")
        if not (0 <= counter <= MASK64 and 0 <= nonce <= MASK64 and
                0 <= pos <= DPF_CHACHA_BUF_WORDS and has32 in (0, 1) and
                0 <= uinteger <= 0xFFFFFFFF):
            raise ValueError("ChaCha20 state values out of range.")
        # The buffer holds blocks [counter - 16, counter): regenerate it from there.
        start = counter if pos == DPF_CHACHA_BUF_WORDS else (counter - 16) & MASK64
        with self.lock:
            self._setup(key, start, nonce)
            if pos < DPF_CHACHA_BUF_WORDS:
                dpf_chacha_refill(self.rng_state)
            self.rng_state.pos = pos
            self.rng_state.has_uint32 = has32
            self.rng_state.uinteger = uinteger
        self._from_os = False
        _os_keyed.discard(self)


cdef class Key:
    """Key(generator)

    The key of one release: 256 bits drawn from ``generator`` (a :class:`ChaCha20`). Kernels
    given the same ``Key`` and consecutive ``chunk0`` values draw the noise of consecutive
    blocks of one release. ``bytes(key)`` is its 32 bytes (the eight key words, little-endian):
    whoever holds them can rebuild and remove the release's noise.
    """
    cdef uint32_t words[8]

    def __init__(self, ChaCha20 generator not None):
        generator.draw_key(self.words)

    @staticmethod
    def from_bytes(data):
        """The Key whose ``bytes()`` are ``data`` (32 bytes)."""
        cdef Key key = Key.__new__(Key)          # words filled below, never left zero
        b = _as_bytes(data, "key", 32)
        for i in range(8):
            key.words[i] = int.from_bytes(b[4 * i:4 * i + 4], "little")
        return key

    def __bytes__(self):
        return b"".join(int(self.words[i]).to_bytes(4, "little") for i in range(8))

    # A key is owned by its release: a copy or a pickle would let its noise be drawn again
    # (a Dask task is sent the 32 bytes, on purpose, and rebuilds it with from_bytes).
    def __reduce__(self):
        raise TypeError("A release's key is not copied or pickled (send bytes(key) where a "
                        "piece of the release is drawn elsewhere).")

    def __copy__(self):
        raise TypeError("A release's key is not copied or pickled.")

    def __deepcopy__(self, memo):
        raise TypeError("A release's key is not copied or pickled.")


cdef int _load_key(object source, uint32_t *key) except -1:
    """The key of a kernel call: drawn fresh from a ChaCha20, or copied from a Key."""
    if type(source) is Key:
        memcpy(key, (<Key>source).words, sizeof(uint32_t) * 8)
        return 0
    if not isinstance(source, ChaCha20):
        raise TypeError(f"a kernel's source of randomness must be a dpfast.ChaCha20 or a Key, "
                        f"not {type(source).__name__}")
    return (<ChaCha20>source).draw_key(key)


# -- an accountant's totals ----------------------------------------------------------------

# Forks of this process so far, counted in the child by pthread_atfork: os.fork and a fork()
# made by any C code alike (the latter runs no Python at-fork hook). A Tally made before a
# fork sees the count differ in the child.
cdef extern from "<pthread.h>" nogil:
    int pthread_atfork(void (*prepare)() noexcept nogil, void (*parent)() noexcept nogil,
                       void (*child)() noexcept nogil)

cdef uint64_t _forks_seen = 0

cdef void _count_fork() noexcept nogil:
    global _forks_seen
    _forks_seen += 1

pthread_atfork(NULL, NULL, _count_fork)


cdef class Tally:
    """Tally(budget)

    What an accountant has spent and its record of spends, changed under one lock. ``spend``
    is the check-and-charge of a plain spend, compiled because a spend is on the path of every
    release; anything else (parallel blocks, groups, advanced composition, ledger files)
    holds the lock with ``with tally:`` and updates ``spent`` and ``records`` itself. ``budget`` and ``spent`` are
    (epsilon, delta) pairs of exact amounts (see dpfast.accounting).
    """
    cdef PyThread_type_lock _lock
    cdef public tuple budget
    cdef public tuple spent
    cdef public list records
    cdef public bint shared         # backed by a ledger file: a forked child may spend it
    cdef bint _foreign
    cdef uint64_t _forks            # _forks_seen when made: another value means a fork since
    cdef dict _eps_cache, _delta_cache

    def __cinit__(self, tuple budget, dict eps_cache, dict delta_cache):
        self._lock = PyThread_allocate_lock()
        if self._lock == NULL:
            raise MemoryError()
        self.budget = budget
        self.spent = (0, 0)
        self.records = []
        self.shared = False
        self._foreign = False
        self._forks = _forks_seen
        self._eps_cache = eps_cache
        self._delta_cache = delta_cache

    @property
    def foreign(self):
        """True for a copy in a forked child (set by the at-fork hook of dpfast.accounting,
        or seen here for any fork, libc's included: the kernel's pthread_atfork count), unless
        the tally is ``shared`` (a ledger file's), and once set by its owner (a closed
        lease)."""
        return self._foreign or (not self.shared and self._forks != _forks_seen)

    @foreign.setter
    def foreign(self, value):
        self._foreign = bool(value)

    def __dealloc__(self):
        if self._lock != NULL:
            PyThread_free_lock(self._lock)

    cdef int _acquire(self) except -1:
        # Waiting releases the GIL: the holder may be Python code that needs it.
        if not PyThread_acquire_lock(self._lock, NOWAIT_LOCK):
            with nogil:
                PyThread_acquire_lock(self._lock, WAIT_LOCK)
        return 0

    def __enter__(self):
        self._acquire()
        return self

    def __exit__(self, *exc):
        PyThread_release_lock(self._lock)
        return False

    def spend(self, epsilon, delta, label):
        """The plain spend of floats already converted: their exact amounts e and d are
        looked up in the caches given at creation (which hold checked values only), and the
        record is (epsilon, delta, label, (), (e, d), None). True if charged; False if either
        value is not a cached float (the caller converts it), the budget refuses, or the tally
        is foreign (a copy in a forked child): the caller then takes the general path."""
        if type(epsilon) is not float or type(delta) is not float or self._foreign or \
                (not self.shared and self._forks != _forks_seen):
            return False
        e = self._eps_cache.get(epsilon)
        d = self._delta_cache.get(delta)
        if e is None or d is None:
            return False
        self._acquire()
        try:
            se = self.spent[0] + e
            sd = self.spent[1] + d
            if se > self.budget[0] or sd > self.budget[1]:
                return False
            self.spent = (se, sd)
            self.records.append((epsilon, delta, label, (), (e, d), None))
            return True
        finally:
            PyThread_release_lock(self._lock)


# -- sampling kernels ---------------------------------------------------------------------

cdef inline int64_t _nchunks(int64_t n) nogil:
    return (n + DPF_CHUNK - 1) // DPF_CHUNK


cdef void _run(dpf_chunk_fn fn, void *task, int64_t nchunks, int threads, int64_t n):
    """The driver, with the GIL released for calls on more than NOGIL_MIN elements."""
    if n > NOGIL_MIN:
        with nogil:
            dpf_run(fn, task, nchunks, threads)
    else:
        dpf_run(fn, task, nchunks, threads)


cdef void *_data(cnp.ndarray arr, int typenum, int64_t n, str name,
                 bint writeable=False) except NULL:
    """The data of a C-contiguous array of type `typenum` in native byte order with n
    elements (writeable if asked). The Python layer has checked all this before charging;
    this is a last guard against a programming error, before any randomness is drawn."""
    if cnp.PyArray_TYPE(arr) != typenum or not cnp.PyArray_IS_C_CONTIGUOUS(arr) \
            or cnp.PyArray_SIZE(arr) != n or not cnp.PyArray_ISNOTSWAPPED(arr) \
            or (writeable and not cnp.PyArray_ISWRITEABLE(arr)):
        raise ValueError(f"{name}: expected a C-contiguous native "
                         f"{np.dtype(cnp.PyArray_TypeObjectFromType(typenum)).name} array "
                         f"of {n} elements{' (writeable)' if writeable else ''}")
    return cnp.PyArray_DATA(arr)


cdef _fill(object source, dpf_fill_task *task, cnp.ndarray out, int dtype, object base,
           int threads, uint64_t chunk0):
    """Point the task at out and base, draw its key, run it."""
    task.n = cnp.PyArray_SIZE(out)
    task.out = _data(out, dtype, task.n, "out", True)
    task.base = _data(base, dtype, task.n, "base") if base is not None else NULL
    task.chunk0 = chunk0
    _load_key(source, task.key)
    _run(dpf_fill_chunk, task, _nchunks(task.n), threads, task.n)
    return out


cdef dpf_fill_task _fill_task(int mode, double t, double g):
    cdef dpf_fill_task task
    task.mode = mode
    task.g = g
    task.ginv = 1.0 / g
    dpf_dlap_params_init(&task.lap, t)
    return task


def fill_uniform(source, int threads, cnp.ndarray out not None, uint64_t chunk0=0):
    """Full-precision uniforms on (0, 1) into the float64 array out."""
    cdef dpf_fill_task task = _fill_task(DPF_MODE_UNIFORM, 1.0, 1.0)
    return _fill(source, &task, out, cnp.NPY_FLOAT64, None, threads, chunk0)


def fill_discrete_laplace(source, int threads, cnp.ndarray out not None, double t,
                          object base=None, uint64_t chunk0=0):
    """out[i] = base[i] + K_i, K_i two-sided geometric with parameter t; out int64 or int32
    (an int32 sum is computed in int64 and narrowed: the caller keeps it in range), base of
    the same type, None, or out itself."""
    cdef dpf_fill_task task
    if cnp.PyArray_TYPE(out) == cnp.NPY_INT32:
        task = _fill_task(DPF_MODE_DLAP_I32, t, 1.0)
        return _fill(source, &task, out, cnp.NPY_INT32, base, threads, chunk0)
    task = _fill_task(DPF_MODE_DLAP_INT, t, 1.0)
    return _fill(source, &task, out, cnp.NPY_INT64, base, threads, chunk0)


def fill_laplace(source, int threads, cnp.ndarray out not None, double t, double g,
                 object base=None, uint64_t chunk0=0):
    """out[i] = (rint(base[i]/g) + K_i) * g (float64; base None or out itself allowed), g a
    power of two and K_i two-sided geometric with parameter t."""
    cdef dpf_fill_task task = _fill_task(DPF_MODE_DLAP_GRID, t, g)
    return _fill(source, &task, out, cnp.NPY_FLOAT64, base, threads, chunk0)


cdef object _fill_one(object source, int mode, double t, double g, const void *base):
    """One sample (plus base) of a fill, without arrays: the small-call path. The same
    kernel and streams as a one-element array."""
    cdef dpf_fill_task task = _fill_task(mode, t, g)
    cdef int64_t i64 = 0
    cdef double f64 = 0.0
    task.n = 1
    task.base = base
    task.chunk0 = 0
    task.out = &f64 if mode == DPF_MODE_DLAP_GRID or mode == DPF_MODE_UNIFORM else &i64
    _load_key(source, task.key)
    dpf_fill_chunk(&task, 0, 0)
    return i64 if mode == DPF_MODE_DLAP_INT else f64


def uniform_scalar(source, int threads):
    """One full-precision uniform (as fill_uniform on one element)."""
    return _fill_one(source, DPF_MODE_UNIFORM, 1.0, 1.0, NULL)


def discrete_laplace_scalar(Key key not None, int threads, double t, object base=None):
    """One discrete Laplace sample plus the int64 base (as fill_discrete_laplace), under a
    release's key only (the one-number path of the noise layer calls it directly)."""
    cdef int64_t b
    if base is None:
        return _fill_one(key, DPF_MODE_DLAP_INT, t, 1.0, NULL)
    b = base
    return _fill_one(key, DPF_MODE_DLAP_INT, t, 1.0, &b)


def laplace_scalar(Key key not None, int threads, double t, double g, object base=None):
    """One grid Laplace sample plus the rounded float base (as fill_laplace), under a
    release's key only."""
    cdef double b
    if base is None:
        return _fill_one(key, DPF_MODE_DLAP_GRID, t, g, NULL)
    b = base
    return _fill_one(key, DPF_MODE_DLAP_GRID, t, g, &b)


# sigma -> (m, r) of the discrete Gaussian's proposal: choosing sums acceptance rates (tens of
# microseconds for small sigma), and releases draw the same few sigmas again and again.
_dgauss_choices = {}


cdef void _dgauss_params(dpf_dgauss_task *task, double sigma):
    cdef int m, r
    got = _dgauss_choices.get(sigma)
    if got is None:
        dpf_dgauss_choose(sigma, &m, &r)
        if len(_dgauss_choices) >= 1024:
            _dgauss_choices.clear()
        _dgauss_choices[sigma] = (m, r)
    else:
        m, r = got
    dpf_dgauss_setup(task, sigma, m, r)


cdef _dgauss(object source, cnp.ndarray out, int dtype, double sigma, int kind, double g,
             object base, int threads, uint64_t chunk0):
    cdef dpf_dgauss_task task
    _dgauss_params(&task, sigma)
    task.kind = kind
    task.g = g
    task.ginv = 1.0 / g
    task.chunk0 = chunk0
    task.n = cnp.PyArray_SIZE(out)
    task.out = _data(out, dtype, task.n, "out", True)
    task.base = _data(base, dtype, task.n, "base") if base is not None else NULL
    _load_key(source, task.key)
    _run(dpf_dgauss_chunk, &task, _nchunks(task.n), threads, task.n)
    return out


def fill_discrete_gaussian(source, int threads, cnp.ndarray out not None, double sigma,
                           object base=None, uint64_t chunk0=0):
    """out[i] = base[i] + Z_i, Z_i discrete Gaussian with parameter sigma (P[Z = z]
    proportional to exp(-z^2 / (2 sigma^2))); out int64 or int32 (an int32 sum is computed
    in int64 and narrowed: the caller keeps it in range, as for fill_discrete_laplace), base
    of the same type, None, or out itself.  Cell i's noise depends on the key, i and chunk0
    only; int32 and int64 cells get the same noise."""
    if cnp.PyArray_TYPE(out) == cnp.NPY_INT32:
        return _dgauss(source, out, cnp.NPY_INT32, sigma, DPF_DG_I32, 1.0, base, threads,
                       chunk0)
    return _dgauss(source, out, cnp.NPY_INT64, sigma, DPF_DG_I64, 1.0, base, threads, chunk0)


def fill_gaussian(source, int threads, cnp.ndarray out not None, double sigma_cells, double g,
                  object base=None, uint64_t chunk0=0):
    """out[i] = (rint(base[i]/g) + Z_i) * g (float64), Z_i discrete Gaussian with parameter
    sigma_cells (the Gaussian's sigma in grid steps), g a power of two."""
    return _dgauss(source, out, cnp.NPY_FLOAT64, sigma_cells, DPF_DG_GRID, g, base, threads,
                   chunk0)


def dgauss_proposal(double sigma):
    """(m, r, efficiency): the discrete Gaussian sampler's proposal for sigma (block 2^m,
    geometric ratio 2^-r per block) and its expected acceptance rate."""
    cdef dpf_dgauss_task task
    _dgauss_params(&task, sigma)
    return task.m, task.r, dpf_dgauss_efficiency(sigma, task.m, task.r)


def dgauss_accept_prob(double sigma, double g, double v):
    """The sampler's computed acceptance probability of the proposal |x| = g 2^m + v."""
    cdef dpf_dgauss_task task
    _dgauss_params(&task, sigma)
    return dpf_dgauss_accept_prob(&task, g, v)


# -- selection kernels --------------------------------------------------------------------

cdef int _utype(cnp.ndarray u) except -1:
    if not u.flags.c_contiguous or u.ndim != 1 or not u.dtype.isnative:
        raise ValueError("utilities: expected a 1-d C-contiguous native array")
    if u.dtype == np.float64:
        return DPF_F64
    if u.dtype == np.float32:
        return DPF_F32
    if u.dtype == np.int64:
        return DPF_I64
    if u.dtype == np.int32:
        return DPF_I32
    raise ValueError(f"utilities: unsupported dtype {u.dtype}")


cdef int _select_task(dpf_select_task *task, cnp.ndarray u, int noise, double umax,
                      double inv_scale) except -1:
    task.noise = noise
    task.umax = umax
    task.inv_scale = inv_scale
    task.utype = _utype(u)
    task.u = cnp.PyArray_DATA(u)
    task.n = u.shape[0]
    task.k = 0
    task.heap_val = NULL
    task.heap_idx = NULL
    task.heap_len = NULL
    return 0


def noisy_argmax(source, int threads, cnp.ndarray u not None, int noise, double umax,
                 double inv_scale):
    """Index of the largest (u_i - umax) * inv_scale + N_i, N_i unit noise of the given kind
    (lowest index on ties; -1 if every score is -inf); u float64, float32, int64 or int32.
    Chunk winners are combined in chunk order, so threads do not matter."""
    return noisy_max_score(source, threads, u, noise, umax, inv_scale)[1]


def noisy_max_score(source, int threads, cnp.ndarray u not None, int noise, double umax,
                    double inv_scale):
    """(score, index) of noisy_argmax's winner for these arguments: its noisy score
    (u_i - umax) * inv_scale + N_i as well as its index ((-inf, -1) if every score is -inf).
    Calls over disjoint blocks of candidates sharing umax and inv_scale, each with a fresh
    key, have independent noise, so the block winner with the largest score (the first on
    ties) is the winner of one call over all the blocks, in distribution."""
    cdef dpf_select_task task
    cdef int64_t c, best = -1
    cdef double top = -INFINITY
    _select_task(&task, u, noise, umax, inv_scale)
    cdef int64_t nchunks = max(_nchunks(task.n), 1)
    task.best_idx = <int64_t *>PyMem_Malloc(nchunks * sizeof(int64_t))
    task.best_val = <double *>PyMem_Malloc(nchunks * sizeof(double))
    try:
        if task.best_idx == NULL or task.best_val == NULL:
            raise MemoryError()
        _load_key(source, task.key)
        _run(dpf_select_chunk, &task, nchunks, threads, task.n)
        for c in range(nchunks):           # the first maximum: the lowest chunk wins a tie
            if task.best_val[c] > top:
                top = task.best_val[c]
                best = task.best_idx[c]
    finally:
        PyMem_Free(task.best_idx)
        PyMem_Free(task.best_val)
    return top, best

cdef _top_k(object source, int threads, cnp.ndarray u, int noise, double umax,
            double inv_scale, int64_t k):
    """The scores and indices of the k best noisy scores, sorted best first: each thread keeps
    a heap of the k best it has seen, so memory is O(k threads), not O(len(u))."""
    cdef dpf_select_task task
    _select_task(&task, u, noise, umax, inv_scale)
    cdef int64_t nchunks = max(_nchunks(task.n), 1)
    cdef int slots = max(1, min(threads, nchunks))
    idx = np.empty(nchunks, dtype=np.int64)
    val = np.empty(nchunks, dtype=np.float64)
    hv = np.empty(slots * k, dtype=np.float64)
    hi = np.empty(slots * k, dtype=np.int64)
    hl = np.zeros(slots, dtype=np.int64)
    task.best_idx = <int64_t *>cnp.PyArray_DATA(idx)
    task.best_val = <double *>cnp.PyArray_DATA(val)
    task.k = k
    task.heap_val = <double *>cnp.PyArray_DATA(hv)
    task.heap_idx = <int64_t *>cnp.PyArray_DATA(hi)
    task.heap_len = <int64_t *>cnp.PyArray_DATA(hl)
    _load_key(source, task.key)
    _run(dpf_select_chunk, &task, nchunks, slots, task.n)
    keep = np.concatenate([np.arange(s * k, s * k + hl[s]) for s in range(slots)])
    vals, inds = hv[keep], hi[keep]
    order = np.lexsort((inds, -vals))[:k]     # best first, the lower index on ties
    return vals[order], inds[order]


def noisy_top_k(source, int threads, cnp.ndarray u not None, int noise, double umax,
                double inv_scale, int64_t k):
    """Indices of the k largest noisy scores (as noisy_argmax), best first, the lower index
    first on ties. Each thread keeps a heap of its k best, so memory is O(k threads), not
    O(len(u))."""
    if k < 1:
        raise ValueError("k must be >= 1")
    return _top_k(source, threads, u, noise, umax, inv_scale, k)[1]


cdef int64_t _em_pick(const double *sums, int64_t nchunks, const void *u, int utype,
                      int64_t n, double umax, double a, const double *v) noexcept nogil:
    """The candidate at the uniforms v[0] (which chunk) and v[1] (where within it); sums
    (per chunk) are not read when there is one chunk."""
    cdef double total = 0.0, target
    cdef int64_t chunk, i
    if nchunks == 1:
        return dpf_find_exp(u, utype, 0, n, umax, a, v[1])
    # The chunk is the first whose cumulative sum, in chunk order, exceeds v[0] times the total.
    for i in range(nchunks):
        total += sums[i]
    target = v[0] * total
    total = 0.0
    chunk = nchunks - 1
    for i in range(nchunks):
        total += sums[i]
        if total > target:
            chunk = i
            break
    while sums[chunk] == 0.0:           # only if rounding landed on an empty chunk
        chunk -= 1
    i = dpf_find_exp(u, utype, chunk * DPF_CHUNK, min(DPF_CHUNK, n - chunk * DPF_CHUNK),
                     umax, a, v[1])
    return chunk * DPF_CHUNK + i


def exponential_mechanism(source, int threads, cnp.ndarray u not None, double umax, double a):
    """Index i drawn with probability proportional to exp((u_i - umax) * a), by a two-stage
    inverse CDF: a chunk with probability proportional to its sum (chunk sums added in chunk
    order, so threads do not matter), then a candidate within it against the chunk's own
    running sum; one fresh full-precision uniform for each stage."""
    cdef dpf_sum_exp_task task
    cdef dpf_fill_task draw = _fill_task(DPF_MODE_UNIFORM, 1.0, 1.0)
    cdef double v[2]
    cdef int64_t n = u.shape[0], nchunks = _nchunks(n), chosen
    if n == 0:
        raise ValueError("exponential_mechanism needs at least one candidate")
    task.utype = _utype(u)
    task.u = cnp.PyArray_DATA(u)
    task.n = n
    task.umax = umax
    task.a = a
    draw.n = 2
    draw.out = v
    draw.base = NULL
    draw.chunk0 = 0
    task.sums = <double *>PyMem_Malloc(nchunks * sizeof(double))
    try:
        if task.sums == NULL:
            raise MemoryError()
        _load_key(source, draw.key)
        if nchunks > 1:                     # one chunk is chosen whatever its sum
            _run(dpf_sum_exp_chunk, &task, nchunks, threads, n)
        dpf_fill_chunk(&draw, 0, 0)
        if n > NOGIL_MIN:
            with nogil:
                chosen = _em_pick(task.sums, nchunks, task.u, task.utype, n, umax, a, v)
        else:
            chosen = _em_pick(task.sums, nchunks, task.u, task.utype, n, umax, a, v)
    finally:
        PyMem_Free(task.sums)
    return chosen


# -- counting kernels ---------------------------------------------------------------------

# Up to this many cells in all, each thread gets a private table; beyond, one shared table.
PRIVATE_CELLS = 1 << 21
# Below this many records one thread is faster than starting more.
MIN_PARALLEL_RECORDS = 1 << 16
# Records per block handed to a thread (at least one block per thread).
DEF BLOCK_RECORDS = 1 << 18

_RECORD_TYPES = {np.dtype(np.float64): DPF_REC_F64, np.dtype(np.float32): DPF_REC_F32,
                 np.dtype(np.int64): DPF_REC_I64, np.dtype(np.int32): DPF_REC_I32,
                 np.dtype(np.int16): DPF_REC_I16, np.dtype(np.int8): DPF_REC_I8,
                 np.dtype(np.uint32): DPF_REC_U32, np.dtype(np.uint16): DPF_REC_U16,
                 np.dtype(np.uint8): DPF_REC_U8}

#: The record dtypes :func:`count_1d` counts without converting them.
RECORD_DTYPES = tuple(_RECORD_TYPES)


cdef cnp.ndarray _count(dpf_count_task *task, int threads):
    """Counts of task's records: one block on the calling thread for small inputs, else blocks
    taken by threads into per-thread tables (summed at the end) or, for tables too large to
    copy per thread, with atomic adds into one table."""
    cdef cnp.ndarray counts = np.zeros(task.ncells, dtype=np.int64)
    cdef cnp.ndarray partial
    task.counts = <int64_t *>cnp.PyArray_DATA(counts)
    task.tables = NULL
    task.atomic = 0
    task.nblocks = 1
    if task.n >= MIN_PARALLEL_RECORDS and threads > 1:
        task.nblocks = max(threads, (task.n + BLOCK_RECORDS - 1) // BLOCK_RECORDS)
        task.row = (task.ncells + 7) // 8 * 8           # rows on separate cache lines
        if threads * task.row <= PRIVATE_CELLS:
            partial = np.zeros((threads, task.row), dtype=np.int64)
            task.tables = <int64_t *>cnp.PyArray_DATA(partial)
        else:
            task.atomic = 1
    _run(dpf_count_block, task, task.nblocks, threads, task.n)
    if task.tables != NULL:
        return partial[:, :task.ncells].sum(axis=0)
    return counts


def count_1d(cnp.ndarray x not None, const double[::1] edges, int kind, int threads):
    """Counts of the 1-d C-contiguous array x (any dtype of RECORD_DTYPES) in the bins given
    by edges (numpy.histogram's rules); kind is AXIS_SEARCH, AXIS_UNIFORM or AXIS_INTEGER
    (the last for integer data on integral, equally spaced edges)."""
    cdef dpf_axis ax
    cdef dpf_count_task task
    if x.ndim != 1 or not x.flags.c_contiguous or not x.dtype.isnative:
        raise ValueError("x must be 1-d, C-contiguous and in native byte order")
    if x.dtype not in _RECORD_TYPES:
        raise TypeError(f"unsupported dtype {x.dtype}")
    if kind == DPF_AXIS_INTEGER and x.dtype.kind == "f":
        raise ValueError("integer axes need integer data")
    nbins = edges.shape[0] - 1
    if nbins < 1:
        raise ValueError("need at least one bin")
    dpf_axis_init(&ax, &edges[0], nbins, kind)
    task.data = cnp.PyArray_DATA(x)
    task.rtype = _RECORD_TYPES[x.dtype]
    task.n = x.shape[0]
    task.d = 1
    task.axes = &ax
    task.strides = NULL
    task.ncells = nbins
    return _count(&task, threads)


def count_nd(cnp.ndarray sample not None, list edges, list kinds, int threads):
    """Flat (C-order) cell counts of the (n, d) C-contiguous float64 sample; edges[k] and
    kinds[k] describe axis k (AXIS_SEARCH or AXIS_UNIFORM)."""
    if sample.ndim != 2 or not sample.flags.c_contiguous or sample.dtype != np.float64 \
            or not sample.dtype.isnative:
        raise ValueError("sample must be a C-contiguous (n, d) native float64 array")
    cdef int64_t d = sample.shape[1]
    if len(edges) != d or len(kinds) != d:
        raise ValueError("one edges array and kind per dimension")
    cdef dpf_axis *axes = <dpf_axis *>malloc(max(d, 1) * sizeof(dpf_axis))
    cdef int64_t *strides = <int64_t *>malloc(max(d, 1) * sizeof(int64_t))
    cdef dpf_count_task task
    if axes == NULL or strides == NULL:
        free(axes)
        free(strides)
        raise MemoryError()
    cdef const double[::1] e
    cdef int64_t ncells = 1
    keep = [np.ascontiguousarray(a, dtype=np.float64) for a in edges]
    try:
        for k in range(d):
            e = keep[k]
            if e.shape[0] < 2:
                raise ValueError("need at least one bin per axis")
            dpf_axis_init(&axes[k], &e[0], e.shape[0] - 1, kinds[k])
        for k in reversed(range(d)):
            strides[k] = ncells
            ncells *= keep[k].shape[0] - 1
        task.data = cnp.PyArray_DATA(sample)
        task.rtype = DPF_REC_ND
        task.n = sample.shape[0]
        task.d = d
        task.axes = axes
        task.strides = strides
        task.ncells = ncells
        return _count(&task, threads)
    finally:
        free(axes)
        free(strides)


def count_codes(cnp.ndarray codes not None, int64_t ncells, int threads):
    """Counts of the int64 codes in [0, ncells); other codes are not counted."""
    cdef dpf_count_task task
    task.data = _data(codes, cnp.NPY_INT64, codes.size, "codes")
    task.rtype = DPF_REC_CODES
    task.n = codes.size
    task.d = 1
    task.axes = NULL
    task.strides = NULL
    task.ncells = ncells
    return _count(&task, threads)


def sum_groups(const double[::1] a, Py_ssize_t b, double[::1] out):
    """out[i] = a[i*b] + ... + a[i*b + b - 1] (len(a) == b * len(out)), on the calling
    thread without the GIL: the level sums of a tree, in one pass at memory speed (numpy's
    reduction over short rows is about twice as slow)."""
    cdef Py_ssize_t i, j, m = out.shape[0]
    cdef double acc
    if b < 1 or a.shape[0] != b * m:
        raise ValueError("sum_groups needs len(a) == b * len(out)")
    with nogil:
        for i in range(m):
            acc = 0.0
            for j in range(b):
                acc = acc + a[i * b + j]
            out[i] = acc


def add_to_groups(double[::1] a, Py_ssize_t b, const double[::1] v):
    """a[i*b + j] += v[i] for every j < b (len(a) == b * len(v)), without the GIL: a tree's
    parents' corrections handed down to their children in one pass."""
    cdef Py_ssize_t i, j, m = v.shape[0]
    cdef double add
    if b < 1 or a.shape[0] != b * m:
        raise ValueError("add_to_groups needs len(a) == b * len(v)")
    with nogil:
        for i in range(m):
            add = v[i]
            for j in range(b):
                a[i * b + j] += add


def value_range(cnp.ndarray x not None):
    """(smallest, largest) element of a C-contiguous native float64, float32, int64 or int32
    array with at least one element, in one pass: Python ints for integer arrays, floats
    (both NaN if any element is NaN) for floating ones. None for other arrays."""
    cdef int64_t ilo = 0, ihi = 0
    cdef double flo = 0.0, fhi = 0.0
    cdef size_t n = cnp.PyArray_SIZE(x)
    cdef const void *p = cnp.PyArray_DATA(x)
    cdef int t = cnp.PyArray_TYPE(x), dtype
    if n == 0 or not cnp.PyArray_IS_C_CONTIGUOUS(x) or not cnp.PyArray_ISNOTSWAPPED(x):
        return None
    if t == cnp.NPY_FLOAT64:
        dtype = DPF_F64
    elif t == cnp.NPY_FLOAT32:
        dtype = DPF_F32
    elif t == cnp.NPY_INT64:
        dtype = DPF_I64
    elif t == cnp.NPY_INT32:
        dtype = DPF_I32
    else:
        return None
    if n > 1 << 16:
        with nogil:
            dpf_value_range(p, dtype, n, &flo, &fhi, &ilo, &ihi)
    else:
        dpf_value_range(p, dtype, n, &flo, &fhi, &ilo, &ihi)
    if dtype == DPF_I64 or dtype == DPF_I32:
        return ilo, ihi
    return flo, fhi


def checksum(cnp.ndarray x not None, uint64_t seed=0):
    """A 64-bit checksum of the bytes of a C-contiguous array (see counting.h: detects
    changed blocks of a file; not a cryptographic hash). The GIL is released for large
    arrays."""
    cdef size_t n = cnp.PyArray_NBYTES(x)
    cdef const void *p = cnp.PyArray_DATA(x)
    cdef uint64_t h
    if not cnp.PyArray_IS_C_CONTIGUOUS(x):
        raise ValueError("checksum needs a C-contiguous array")
    if n > 1 << 16:
        with nogil:
            h = dpf_checksum(p, n, seed)
    else:
        h = dpf_checksum(p, n, seed)
    return h


# -- test shims -----------------------------------------------------------------------------

cdef Py_ssize_t _paired(const uint64_t[::1] words, const uint64_t[::1] n0) except -1:
    if n0.shape[0] != words.shape[0]:
        raise ValueError("words and n0 differ in length")
    return words.shape[0]


def find_exp(cnp.ndarray u not None, Py_ssize_t lo, Py_ssize_t hi, double umax, double a,
             double v):
    """Inverse CDF of the weights exp((u_i - umax) * a) within [lo, hi) at the uniform v:
    the index whose running sum first exceeds v times their total (-1 if all are 0)."""
    cdef int64_t i
    cdef int utype = _utype(u)
    if not 0 <= lo <= hi <= u.shape[0]:
        raise ValueError("bad range")
    if hi == lo:
        return -1
    i = dpf_find_exp(cnp.PyArray_DATA(u), utype, lo, hi - lo, umax, a, v)
    if i == -2:
        raise ValueError("find_exp searches at most one chunk")
    return -1 if i < 0 else lo + i


def noisy_scores(source, int threads, cnp.ndarray u not None, int noise, double umax,
                 double inv_scale):
    """Every noisy score of noisy_argmax's call with these arguments, in index order
    (keeps all of them: for tests)."""
    vals, inds = _top_k(source, threads, u, noise, umax, inv_scale, max(u.shape[0], 1))
    out = np.empty(u.shape[0])
    out[inds] = vals
    return out


def select_noise_from_bits(const uint64_t[::1] words, const uint64_t[::1] n0, int kind):
    """Unit selection noise the kernel derives from each word."""
    cdef Py_ssize_t i, n = _paired(words, n0)
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] o = out
    for i in range(n):
        o[i] = dpf_select_noise_from_bits(words[i], n0[i], kind)
    return out


def exp_nonpos(const double[::1] x):
    """The kernel's exp on x <= 0."""
    out = np.empty(x.shape[0], dtype=np.float64)
    cdef double[::1] o = out
    cdef Py_ssize_t i
    for i in range(x.shape[0]):
        o[i] = dpf_exp_nonpos_shim(x[i])
    return out


def dlap_params(double t):
    """The constants the discrete Laplace kernel uses for parameter t."""
    cdef dpf_dlap_params p
    dpf_dlap_params_init(&p, t)
    return {"t": p.t, "c": p.c, "a_hi": p.a_hi, "a_lo": p.a_lo}


def dlap_from_bits(const uint64_t[::1] words, const uint64_t[::1] n0, double t):
    """Signed discrete Laplace samples (as float64) that the kernel derives from keystream
    word words[i] when the binade has n0[i] leading zeros."""
    cdef dpf_dlap_params p
    cdef Py_ssize_t i, n = _paired(words, n0)
    dpf_dlap_params_init(&p, t)
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] o = out
    for i in range(n):
        o[i] = dpf_dlap_from_bits(words[i], n0[i], &p)
    return out


def dlap_z_from_bits(const uint64_t[::1] words, const uint64_t[::1] n0, double t):
    """The kernel's unfloored magnitude t*(c + L) for each word, as (integer part, rest):
    the sample magnitude is fb + floor(rest) (for error measurements)."""
    cdef dpf_dlap_params p
    cdef Py_ssize_t i, n = _paired(words, n0)
    dpf_dlap_params_init(&p, t)
    fb = np.empty(n, dtype=np.float64)
    rest = np.empty(n, dtype=np.float64)
    cdef double[::1] f = fb
    cdef double[::1] r = rest
    for i in range(n):
        dpf_dlap_z_from_bits(words[i], n0[i], &p, &f[i], &r[i])
    return fb, rest


def uniform_from_bits(const uint64_t[::1] words, const uint64_t[::1] n0):
    """The uniform the kernel derives from words[i] with n0[i] leading binade zeros."""
    cdef Py_ssize_t i, n = _paired(words, n0)
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] o = out
    for i in range(n):
        o[i] = dpf_uniform_from_bits(words[i], n0[i])
    return out


# -- statistics of records -----------------------------------------------------------------

cdef extern from "records.h":
    enum:
        DPF_KEPT
        DPF_KEPT_FIRST
    ctypedef struct dpf_bound_task:
        const int64_t *person
        const int64_t *group
        const double *prio
        const double *gprio
        const int64_t *pos
        int64_t total
        uint32_t row_key[8]
        uint32_t pair_key[8]
        int pair_prio
        uint8_t *kept
        int64_t n, max_groups, max_rows
        void *recs
        int64_t *start
        int64_t nparts
        int part_bits
        int failed
    void dpf_bound_prepare(dpf_bound_task *t, int threads) nogil
    void dpf_bound_chunk(void *task, int64_t chunk, int slot) noexcept nogil
    void dpf_sort_u32(uint32_t *keys, uint32_t *tmp, int64_t n) nogil
    void dpf_quantile_weights(const uint32_t *s, int64_t m, int64_t lo, int64_t hi,
                              double target, double a, double *w) nogil
    void dpf_sort_u64(uint64_t *keys, uint64_t *tmp, int64_t n) nogil
    void dpf_key_sums(const int64_t *code, const uint8_t *flags, const double *x, int64_t n,
                      double lo, double hi, double mid, double g, int64_t k, double g2,
                      int64_t k2, int64_t *rows, int64_t *people, int64_t *s1,
                      int64_t *s2) nogil
    void dpf_grouped_quantile(const uint64_t *s, const int64_t *start, const int64_t *groups,
                              int64_t ngroups, int64_t top, double q, double a,
                              const double *u1, const double *u2, int64_t *out) nogil

KEPT = DPF_KEPT
KEPT_FIRST = DPF_KEPT_FIRST


def bound_contributions(cnp.ndarray person not None, cnp.ndarray group not None,
                        cnp.ndarray prio not None, cnp.ndarray gprio not None,
                        int64_t max_groups, int64_t max_rows, int threads):
    """Flags (uint8) of the rows kept when each person (int64 values of person) keeps at most
    max_groups of their (person, group) pairs (int64 values of group) and max_rows rows in
    each: the pairs with the lowest gprio (read at a pair's first row) and, in each, the rows
    with the lowest prio (float64 priorities, one per row). KEPT marks a kept row, KEPT_FIRST
    one kept row of each pair kept. Deterministic: any thread count gives the same flags.
    (The priorities given: the reference of :func:`bound_keyed`, which draws them.)"""
    cdef dpf_bound_task t
    cdef int64_t n = person.shape[0]
    t.prio = <const double *>_data(prio, cnp.NPY_FLOAT64, n, "prio")
    t.gprio = <const double *>_data(gprio, cnp.NPY_FLOAT64, n, "gprio")
    t.pos = NULL
    t.total = n
    t.pair_prio = 1
    return _bound(&t, person, group, max_groups, max_rows, threads)


def bound_keyed(cnp.ndarray person not None, object group, Key row_key not None,
                Key pair_key not None, object positions, int64_t total,
                int64_t max_groups, int64_t max_rows, int threads):
    """:func:`bound_contributions` with the priorities drawn in the kernel: a row's is the
    uniform that ``fill_uniform`` draws under row_key (its pair's, under pair_key) at the
    row's position in a table of ``total`` rows -- positions[i] (int64, increasing) or, None,
    i. group None: one group (no pair priorities drawn). No priorities are held: the
    kernel's scratch is 32 bytes a row."""
    cdef dpf_bound_task t
    cdef int64_t n = person.shape[0]
    t.prio = NULL
    t.gprio = NULL
    t.pos = NULL
    if positions is not None:
        t.pos = <const int64_t *>_data(positions, cnp.NPY_INT64, n, "positions")
        if n and (positions[0] < 0 or positions[n - 1] >= total
                  or not (np.diff(positions) > 0).all()):
            raise ValueError("positions must be increasing, in [0, total)")
    elif n > total:
        raise ValueError("total must be at least len(person)")
    t.total = total
    memcpy(t.row_key, row_key.words, sizeof(uint32_t) * 8)
    memcpy(t.pair_key, pair_key.words, sizeof(uint32_t) * 8)
    t.pair_prio = group is not None
    if group is None:
        group = np.zeros(n, dtype=np.int64)
    return _bound(&t, person, group, max_groups, max_rows, threads)


cdef _bound(dpf_bound_task *t, cnp.ndarray person, cnp.ndarray group, int64_t max_groups,
            int64_t max_rows, int threads):
    """Run the bounding task t (its priorities set) over person and group."""
    cdef int64_t n = person.shape[0]
    cdef int bits = 0
    if max_groups < 1 or max_rows < 1:
        raise ValueError("max_groups and max_rows must be >= 1")
    if n >= 1 << 32:
        raise ValueError("bound at most 2**32 - 1 rows a call")
    t.person = <const int64_t *>_data(person, cnp.NPY_INT64, n, "person")
    _data(group, cnp.NPY_INT64, n, "group")
    if n and (group.min() < 0 or group.max() >= 1 << 32):
        # Groups as codes in [0, 2**32), in the values' order (the same pairs, sorted alike).
        group = np.unique(group, return_inverse=True)[1].reshape(n).astype(np.int64)
    t.group = <const int64_t *>cnp.PyArray_DATA(group)
    kept = np.zeros(n, dtype=np.uint8)
    recs = np.empty(4 * n, dtype=np.int64)       # one 32-byte record per row
    while bits < 12 and (1 << bits) * 16384 < n:     # partitions of about 16,384 rows
        bits += 1
    start = np.empty((1 << bits) + 1, dtype=np.int64)
    t.kept = <uint8_t *>cnp.PyArray_DATA(kept)
    t.recs = cnp.PyArray_DATA(recs)
    t.start = <int64_t *>cnp.PyArray_DATA(start)
    t.n = n
    t.max_groups = max_groups
    t.max_rows = max_rows
    t.part_bits = bits
    t.nparts = 1 << bits
    t.failed = 0
    with nogil:
        dpf_bound_prepare(t, threads)
        if not t.failed:
            dpf_run(dpf_bound_chunk, t, t.nparts, threads)
    if t.failed:
        raise MemoryError("bound_contributions: out of memory")
    return kept


def sort_u32(cnp.ndarray keys not None):
    """Sort a C-contiguous uint32 array in place (LSD radix sort, GIL released)."""
    cdef int64_t n = keys.shape[0]
    cdef uint32_t *k = <uint32_t *>_data(keys, cnp.NPY_UINT32, n, "keys", True)
    tmp = np.empty(n, dtype=np.uint32)
    cdef uint32_t *p = <uint32_t *>cnp.PyArray_DATA(tmp)
    with nogil:
        dpf_sort_u32(k, p, n)
    return keys


def quantile_weights(cnp.ndarray s not None, int64_t lo, int64_t hi, double target, double a):
    """Log-weights (float64, len(s) + 1) of the exponential mechanism over the integers
    lo..hi for a quantile of the sorted uint32 keys s (all within [lo, hi]): entry j is
    log(the number of integers y with j keys below y) - a * |j - target|."""
    cdef int64_t m = s.shape[0]
    cdef const uint32_t *p = <const uint32_t *>_data(s, cnp.NPY_UINT32, m, "s")
    w = np.empty(m + 1, dtype=np.float64)
    cdef double *o = <double *>cnp.PyArray_DATA(w)
    with nogil:
        dpf_quantile_weights(p, m, lo, hi, target, a, o)
    return w


def sort_u64(cnp.ndarray keys not None):
    """Sort a C-contiguous uint64 array in place (LSD radix sort, GIL released)."""
    cdef int64_t n = keys.shape[0]
    cdef uint64_t *k = <uint64_t *>_data(keys, cnp.NPY_UINT64, n, "keys", True)
    tmp = np.empty(n, dtype=np.uint64)
    cdef uint64_t *p = <uint64_t *>cnp.PyArray_DATA(tmp)
    with nogil:
        dpf_sort_u64(k, p, n)
    return keys


def grouped_quantile(cnp.ndarray s not None, cnp.ndarray start not None,
                     cnp.ndarray groups not None, int64_t top, double q, double a,
                     cnp.ndarray u1 not None, cnp.ndarray u2 not None):
    """One q-quantile (int64 grid index) for each group listed (int64 codes) of the sorted
    uint64 keys (group << 32 | value), group g at s[start[g]:start[g+1]], drawn by the
    exponential mechanism over the gaps with log-weights log(count) - a |j - q m| at the
    uniforms u1 (which gap) and u2 (which integer in it), one per group listed."""
    cdef int64_t ng = groups.shape[0], nstart = start.shape[0]
    cdef const uint64_t *ps = <const uint64_t *>_data(s, cnp.NPY_UINT64, s.shape[0], "s")
    cdef const int64_t *pst = <const int64_t *>_data(start, cnp.NPY_INT64, nstart, "start")
    cdef const int64_t *pg = <const int64_t *>_data(groups, cnp.NPY_INT64, ng, "groups")
    cdef const double *pu1 = <const double *>_data(u1, cnp.NPY_FLOAT64, ng, "u1")
    cdef const double *pu2 = <const double *>_data(u2, cnp.NPY_FLOAT64, ng, "u2")
    if ng and (np.min(groups) < 0 or np.max(groups) >= nstart - 1):
        raise ValueError("groups must be codes in [0, len(start) - 1)")
    if nstart and (start[0] < 0 or start[nstart - 1] > s.shape[0]
                   or (nstart > 1 and np.any(np.diff(start) < 0))):
        raise ValueError("start must be non-decreasing offsets within s")
    out = np.empty(ng, dtype=np.int64)
    cdef int64_t *po = <int64_t *>cnp.PyArray_DATA(out)
    with nogil:
        dpf_grouped_quantile(ps, pst, pg, ng, top, q, a, pu1, pu2, po)
    return out


def key_sums(cnp.ndarray code not None, cnp.ndarray flags not None, object x, int64_t nkeys,
             double lo=0.0, double hi=0.0, double g=1.0, int64_t k=0, double g2=0.0,
             int64_t k2=-1):
    """(rows, people, s1, s2) per key of the rows flagged kept (codes in [0, nkeys), checked):
    rows, people (pairs marked) and, for float64 values x (or None), the exact int64 sums of
    the values' units on the grid g (clamped to [lo, hi], centred, rounded half to even,
    within +-k) and, k2 >= 0, of the centred squares' units on g2 (within +-k2); None for
    what is not computed. One pass, GIL released."""
    cdef int64_t n = code.shape[0]
    cdef const int64_t *pc = <const int64_t *>_data(code, cnp.NPY_INT64, n, "code")
    cdef const uint8_t *pf = <const uint8_t *>_data(flags, cnp.NPY_UINT8, n, "flags")
    cdef const double *px = NULL
    if n and (np.min(code) < 0 or np.max(code) >= nkeys):
        raise ValueError("codes must be in [0, nkeys)")
    if x is not None:
        px = <const double *>_data(x, cnp.NPY_FLOAT64, n, "x")
    rows = np.zeros(nkeys, dtype=np.int64)
    people = np.zeros(nkeys, dtype=np.int64)
    s1 = np.zeros(nkeys, dtype=np.int64) if x is not None else None
    s2 = np.zeros(nkeys, dtype=np.int64) if x is not None and k2 >= 0 else None
    cdef int64_t *pr = <int64_t *>cnp.PyArray_DATA(rows)
    cdef int64_t *pp = <int64_t *>cnp.PyArray_DATA(people)
    cdef int64_t *p1 = <int64_t *>cnp.PyArray_DATA(s1) if s1 is not None else NULL
    cdef int64_t *p2 = <int64_t *>cnp.PyArray_DATA(s2) if s2 is not None else NULL
    cdef double mid = (lo + hi) / 2.0
    with nogil:
        dpf_key_sums(pc, pf, px, n, lo, hi, mid, g, k, g2, k2, pr, pp, p1, p2)
    return rows, people, s1, s2
