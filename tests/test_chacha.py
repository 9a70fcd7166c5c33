"""ChaCha20: RFC 8439 known answers, an independent reference, numpy integration."""
import os
import pickle
import struct

import numpy as np
import pytest

import dpfast as dp
from dpfast import _native
from simd import IMPLS

KEY = bytes(range(32))

# RFC 8439 test vectors: (key, nonce, counter, keystream bytes).
RFC_BLOCKS = {
    "2.3.2": (KEY, bytes.fromhex("000000090000004a00000000"), 1,
              "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
              "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e"),
    "A.1 #1": (bytes(32), bytes(12), 0,
               "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
               "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586"),
    "A.1 #2": (bytes(32), bytes(12), 1,
               "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed"
               "29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f"),
    "A.1 #3": (bytes(31) + b"\x01", bytes(12), 1,
               "3aeb5224ecf849929b9d828db1ced4dd832025e8018b8160b82284f3c949aa5a"
               "8eca00bbb4a73bdad192b5c42f73f2fd4e273644c8b36125a64addeb006c13a0"),
    "A.1 #4": (b"\x00\xff" + bytes(30), bytes(12), 2,
               "72d54dfbf12ec44b362692df94137f328fea8da73990265ec1bbbea1ae9af0ca"
               "13b25aa26cb4a648cb9b9d1be65b2c0924a66c54d545ec1b7374f4872e99f096"),
    "A.1 #5": (bytes(32), bytes(11) + b"\x02", 0,
               "c2c64d378cd536374ae204b9ef933fcd1a8b2288b3dfa49672ab765b54ee27c7"
               "8a970e0e955c14f3a88e741b97c286f75f8fc299e8148362fa198a39531bed6d"),
}

SUNSCREEN = (b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip "
             b"for the future, sunscreen would be it.")
SUNSCREEN_CT = bytes.fromhex(
    "6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b"
    "f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8"
    "07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736"
    "5af90bbf74a35be6b40b8eedf2785e42874d")




def keystream(key, nonce, counter, nbytes):
    words = dp.ChaCha20(key=key, nonce=nonce, counter=counter).random_raw(-(-nbytes // 8))
    return words.astype("<u8").tobytes()[:nbytes]


# -- an independent, slow reference of the RFC 8439 block function -------------------------
def _rotl(v, n):
    return ((v << n) | (v >> (32 - n))) & 0xFFFFFFFF


def _quarter(s, a, b, c, d):
    s[a] = (s[a] + s[b]) & 0xFFFFFFFF; s[d] = _rotl(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & 0xFFFFFFFF; s[b] = _rotl(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & 0xFFFFFFFF; s[d] = _rotl(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & 0xFFFFFFFF; s[b] = _rotl(s[b] ^ s[c], 7)


def reference_block(key, counter64, nonce64):
    """One block in the 64-bit-counter layout (words 12-13 counter, 14-15 nonce)."""
    init = list(struct.unpack("<4I", b"expand 32-byte k")) + list(struct.unpack("<8I", key))
    init += [counter64 & 0xFFFFFFFF, counter64 >> 32, nonce64 & 0xFFFFFFFF, nonce64 >> 32]
    s = list(init)
    for _ in range(10):
        _quarter(s, 0, 4, 8, 12); _quarter(s, 1, 5, 9, 13)
        _quarter(s, 2, 6, 10, 14); _quarter(s, 3, 7, 11, 15)
        _quarter(s, 0, 5, 10, 15); _quarter(s, 1, 6, 11, 12)
        _quarter(s, 2, 7, 8, 13); _quarter(s, 3, 4, 9, 14)
    return struct.pack("<16I", *((x + y) & 0xFFFFFFFF for x, y in zip(s, init)))


# -- known answers -------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(RFC_BLOCKS))
def test_rfc8439_block_vectors(name, impl):
    key, nonce, counter, expected = RFC_BLOCKS[name]
    assert keystream(key, nonce, counter, 64).hex() == expected


def test_rfc8439_sunscreen_encryption(impl):
    ks = keystream(KEY, bytes.fromhex("000000000000004a00000000"), 1, len(SUNSCREEN))
    assert bytes(a ^ b for a, b in zip(SUNSCREEN, ks)) == SUNSCREEN_CT


def test_reference_matches_rfc():
    key, nonce, counter, expected = RFC_BLOCKS["2.3.2"]
    n0, n1, n2 = struct.unpack("<3I", nonce)
    assert reference_block(key, counter | n0 << 32, n1 | n2 << 32).hex() == expected


@pytest.mark.parametrize("counter", [0, 5, 0xFFFFFFF8, 0xFFFFFFFF])
def test_matches_reference_across_32bit_counter_wrap(counter, impl):
    # Blocks past 2^32 carry into state word 13 (the 64-bit counter layout), so a long
    # stream never repeats; a vector batch that straddles the wrap must carry per lane.
    key = bytes(range(7, 39))
    nblocks = 37
    got = dp.ChaCha20(key=key, counter=counter).random_raw(8 * nblocks).astype("<u8").tobytes()
    want = b"".join(reference_block(key, counter + i, 0) for i in range(nblocks))
    assert got == want


def test_all_implementations_agree():
    streams = {}
    for name in IMPLS:
        assert _native.set_simd_impl(name)
        g = dp.ChaCha20(seed=2024)
        streams[name] = np.concatenate([g.random_raw(n) for n in (1, 7, 128, 1000, 3, 4096)])
    _native.set_simd_impl("auto")
    first = streams[IMPLS[0]]
    for name in IMPLS[1:]:
        np.testing.assert_array_equal(streams[name], first)


def test_bulk_and_single_reads_interleave_like_one_stream():
    a = dp.ChaCha20(seed=5)
    b = dp.ChaCha20(seed=5)
    parts = []
    for n in (0, 1, 7, 8, 127, 128, 129, 1000, 12345):
        parts.append(a.random_raw(n))
        parts.append(np.array([a.random_raw()], dtype=np.uint64))
    got = np.concatenate(parts)
    np.testing.assert_array_equal(got, b.random_raw(got.size))


# -- constructor ---------------------------------------------------------------------------
def test_seed_is_reproducible_and_none_is_not():
    np.testing.assert_array_equal(dp.ChaCha20(3).random_raw(8), dp.ChaCha20(3).random_raw(8))
    assert not np.array_equal(dp.ChaCha20(3).random_raw(8), dp.ChaCha20(4).random_raw(8))
    assert not np.array_equal(dp.ChaCha20().random_raw(8), dp.ChaCha20().random_raw(8))


def test_key_property_round_trips():
    assert dp.ChaCha20(key=KEY).key == KEY


@pytest.mark.parametrize("kwargs, exc", [
    (dict(seed=1, key=KEY), ValueError),
    (dict(key=b"short"), ValueError),
    (dict(key="not bytes" * 4), TypeError),
    (dict(key=KEY, nonce=bytes(8)), ValueError),
    (dict(key=KEY, counter=-1), ValueError),
    (dict(key=KEY, counter=2**32), ValueError),
    (dict(key=KEY, counter=1.5), TypeError),
])
def test_bad_constructor_arguments(kwargs, exc):
    with pytest.raises(exc):
        dp.ChaCha20(**kwargs)


# -- numpy integration ---------------------------------------------------------------------
def test_numpy_generator_over_chacha():
    g = np.random.Generator(dp.ChaCha20(seed=11))
    x = g.random(100_000)
    assert 0.0 <= x.min() and x.max() < 1.0
    assert abs(x.mean() - 0.5) < 5 * (1 / 12 / x.size) ** 0.5
    ints = g.integers(0, 2**32, size=10, dtype=np.uint32)
    assert ints.dtype == np.uint32
    # next_double is the top 53 bits of next_uint64 scaled by 2^-53.
    raw = dp.ChaCha20(seed=12).random_raw(5)
    np.testing.assert_array_equal(np.random.Generator(dp.ChaCha20(seed=12)).random(5),
                                  (raw >> np.uint64(11)).astype(np.float64) * 2.0**-53)


def test_default_rng_is_a_chacha_generator():
    g = dp.default_rng(1)
    assert isinstance(g, np.random.Generator)
    assert isinstance(g.bit_generator, dp.ChaCha20)


def test_spawn_gives_distinct_nonce_streams_under_one_key():
    parent = dp.ChaCha20(seed=21)
    kids = parent.spawn(3)
    assert all(k.state["state"]["counter"] == 0 for k in kids)
    grandkids = kids[0].spawn(2)
    nonces = [k.state["state"]["nonce"] for k in kids + grandkids]
    assert len(set(nonces)) == 5
    assert all(k.key == parent.key for k in kids + grandkids)
    firsts = {bytes(k.random_raw(4)) for k in [parent] + kids + grandkids}
    assert len(firsts) == 6
    # The same sequence of spawn calls gives the same streams.
    np.testing.assert_array_equal(dp.ChaCha20(seed=21).spawn(3)[1].random_raw(16),
                                  dp.ChaCha20(seed=21).spawn(3)[1].random_raw(16))
    # And a child stream is exactly ChaCha20 with that nonce.
    child = dp.ChaCha20(seed=21).spawn(1)[0]
    nonce = child.state["state"]["nonce"]
    assert child.random_raw(8).astype("<u8").tobytes() == reference_block(parent.key, 0, nonce)


def test_spawn_from_copies_of_distinct_generators_never_collides():
    # Children pickled separately (as for distributed workers) and parents that differ only
    # in their RFC nonce must still spawn distinct streams.
    kids = dp.ChaCha20(123).spawn(2)
    shipped = [pickle.loads(pickle.dumps(k)) for k in kids]
    grand = [s.spawn(1)[0] for s in shipped]
    assert grand[0].state["state"]["nonce"] != grand[1].state["state"]["nonce"]
    parents = [dp.ChaCha20(key=KEY, nonce=i.to_bytes(12, "little")) for i in range(3)]
    child_nonces = {p.spawn(1)[0].state["state"]["nonce"] for p in parents}
    assert len(child_nonces) == 3


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_os_keyed_generators_are_rekeyed_in_a_forked_child():
    os_keyed = dp.ChaCha20()
    seeded = dp.ChaCha20(seed=8)
    os_keyed.random_raw(3)       # leave keystream in the buffer: the child must not reuse it
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:                 # child: report what it would draw, then leave at once
        os.close(read_fd)
        os.write(write_fd, os_keyed.random_raw(4).tobytes() + seeded.random_raw(4).tobytes())
        os._exit(0)
    os.close(write_fd)
    data = b""
    while len(data) < 64:
        chunk = os.read(read_fd, 64)
        if not chunk:
            break
        data += chunk
    os.close(read_fd)
    os.waitpid(pid, 0)
    child = np.frombuffer(data, dtype=np.uint64)
    assert not np.array_equal(child[:4], os_keyed.random_raw(4))
    np.testing.assert_array_equal(child[4:], seeded.random_raw(4))


def test_bad_state_is_rejected():
    g = dp.ChaCha20(seed=1)
    st = g.state
    bad_key = dict(st, state=dict(st["state"], key=np.zeros(4, dtype=np.uint32)))
    with pytest.raises(ValueError):
        g.state = bad_key
    with pytest.raises(ValueError):
        g.state = dict(st, buffer_pos=999)
    with pytest.raises(ValueError):
        g.state = {"bit_generator": "PCG64"}


def test_generator_spawn_uses_chacha_spawn():
    kids = dp.default_rng(9).spawn(2)
    assert all(isinstance(k.bit_generator, dp.ChaCha20) for k in kids)
    assert kids[0].random() != kids[1].random()


def test_state_and_pickle_round_trip():
    g = dp.ChaCha20(seed=31)
    g.random_raw(77)
    gen = np.random.Generator(g)
    gen.integers(0, 10, dtype=np.uint32)     # leaves half a word buffered
    clone = pickle.loads(pickle.dumps(gen))
    np.testing.assert_array_equal(clone.integers(0, 2**32, 9, dtype=np.uint32),
                                  gen.integers(0, 2**32, 9, dtype=np.uint32))
    np.testing.assert_array_equal(clone.bit_generator.random_raw(300), g.random_raw(300))
    other = dp.ChaCha20()
    other.state = g.state
    np.testing.assert_array_equal(other.random_raw(5), g.random_raw(5))


def test_sampling_kernels_report_an_implementation():
    assert _native.simd_impl() in ("avx512", "avx2", "scalar")
