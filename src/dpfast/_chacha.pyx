"""ChaCha20 (RFC 8439) as a numpy BitGenerator."""
import os
import weakref

import numpy as np

cimport numpy as cnp
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport uint32_t, uint64_t
from numpy.random cimport BitGenerator

cnp.import_array()

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
    const char *dpf_chacha_impl()
    int dpf_chacha_set_impl(const char *name)

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


# Generators keyed from os.urandom; a forked child re-keys them, so that parent and child
# never emit the same keystream (seeded generators are reproducible on purpose and are left
# alone).
_os_keyed = weakref.WeakSet()


def _rekey_after_fork():
    for g in list(_os_keyed):
        (<ChaCha20>g)._rekey_from_os()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_rekey_after_fork)


def simd_impl():
    """Name of the keystream implementation in use: 'avx512', 'avx2' or 'scalar'."""
    return dpf_chacha_impl().decode()


def set_simd_impl(name):
    """Force a keystream implementation ('avx512', 'avx2', 'scalar', 'auto'); for tests.

    Returns True if the CPU can run it (and it is now in use), False otherwise.
    """
    return bool(dpf_chacha_set_impl(name.encode()))


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

    An OS-keyed generator (``seed=None``, no ``key``) is re-keyed from ``os.urandom`` in a
    child process after ``fork()``, discarding buffered keystream. A seeded one is not: its
    point is to repeat.

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
        BitGenerator.__init__(self, seed)
        if key is not None:
            words = np.frombuffer(_as_bytes(key, "key", 32), dtype="<u4").astype(np.uint32)
        elif seed is None:
            words = np.frombuffer(os.urandom(32), dtype="<u4").astype(np.uint32)
            _os_keyed.add(self)
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

    def _draw_key(self):
        """Eight uint32 words for a sub-stream key, taken from this stream."""
        return self.random_raw(4).view(np.uint32)

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
        _os_keyed.discard(self)
