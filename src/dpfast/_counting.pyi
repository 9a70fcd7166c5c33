import numpy as np

AXIS_SEARCH: int
AXIS_UNIFORM: int
AXIS_INTEGER: int
PRIVATE_CELLS: int
MIN_PARALLEL_RECORDS: int

def count_1d(x: np.ndarray, edges: np.ndarray, kind: int, threads: int) -> np.ndarray: ...
def count_nd(sample: np.ndarray, edges: list[np.ndarray], kinds: list[int], threads: int) -> np.ndarray: ...
def count_codes(codes: np.ndarray, ncells: int, threads: int) -> np.ndarray: ...
