import numpy as np

CHUNK: int
NOISE_LAPLACE: int
NOISE_EXPONENTIAL: int
NOISE_GUMBEL: int
MAX_EXTRA_WORDS: int

def fill_uniform(key: np.ndarray, out: np.ndarray, threads: int, chunk0: int = 0) -> None: ...
def fill_discrete_laplace(
    key: np.ndarray,
    out: np.ndarray,
    t: float,
    base: np.ndarray | None,
    threads: int,
    chunk0: int = 0,
) -> None: ...
def fill_discrete_laplace_i32(
    key: np.ndarray,
    out: np.ndarray,
    t: float,
    base: np.ndarray | None,
    threads: int,
    chunk0: int = 0,
) -> None: ...
def fill_grid_laplace(
    key: np.ndarray,
    out: np.ndarray,
    t: float,
    g: float,
    base: np.ndarray | None,
    threads: int,
    chunk0: int = 0,
) -> None: ...
def dlap_params(t: float) -> dict[str, float]: ...
def dlap_from_bits(words: np.ndarray, n0: np.ndarray, t: float) -> np.ndarray: ...
def dlap_z_from_bits(
    words: np.ndarray, n0: np.ndarray, t: float
) -> tuple[np.ndarray, np.ndarray]: ...
def uniform_from_bits(words: np.ndarray, n0: np.ndarray) -> np.ndarray: ...
def have_openmp() -> bool: ...
def simd_impl() -> str: ...
def keystream_impl() -> str: ...
def set_simd_impl(name: str) -> bool: ...
def noisy_argmax(
    key: np.ndarray,
    u: np.ndarray,
    noise: int,
    umax: float,
    inv_scale: float,
    threads: int,
    scores_out: np.ndarray | None = None,
) -> int: ...
def sum_exp_chunks(u: np.ndarray, umax: float, a: float, threads: int) -> np.ndarray: ...
def find_exp(u: np.ndarray, lo: int, hi: int, umax: float, a: float, v: float) -> int: ...
def select_noise_from_bits(words: np.ndarray, n0: np.ndarray, kind: int) -> np.ndarray: ...
def exp_nonpos(x: np.ndarray) -> np.ndarray: ...
def fill_discrete_gaussian(
    key: np.ndarray,
    out: np.ndarray,
    sigma: float,
    base: np.ndarray | None,
    threads: int,
    chunk0: int = 0,
) -> None: ...
def fill_grid_gaussian(
    key: np.ndarray,
    out: np.ndarray,
    sigma_cells: float,
    g: float,
    base: np.ndarray | None,
    threads: int,
    chunk0: int = 0,
) -> None: ...
