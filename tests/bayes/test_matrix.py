import numpy as np
import pytest

from filterd.bayes.matrix import DenseMatrix, SparseMatrix


@pytest.fixture(params=[DenseMatrix, SparseMatrix])
def storage(request: pytest.FixtureRequest) -> DenseMatrix | SparseMatrix:
    s: DenseMatrix | SparseMatrix = request.param()
    for _ in range(3):
        s.add_class()
    s.reserve(10)
    return s


def test_increments_add_up_and_columns_read_them_back(storage: DenseMatrix | SparseMatrix) -> None:
    rows, ids = np.array([0, 2, 2, 1]), np.array([5, 5, 5, 9])
    storage.add(rows, ids, np.array([[1, 2, 3, 4], [1, 1, 1, 1], [10, 20, 30, 40], [-5, 2, 2, 0]]))
    N, DF, T, W = storage.columns(np.array([5, 9, 0]))
    assert N.tolist() == [[1, 0, 0], [0, 4, 0], [5, 0, 0]]
    assert DF.tolist() == [[1, 0, 0], [0, 1, 0], [2, 0, 0]]
    assert T[2, 0] == 50
    assert W.tolist() == [[-5, 0, 0], [0, 0, 0], [4, 0, 0]]  # a weight may be negative


def test_entries_list_the_nonzero_pairs(storage: DenseMatrix | SparseMatrix) -> None:
    storage.add(np.array([1, 0]), np.array([3, 7]), np.array([[2, 1], [1, 1], [5, 5], [3, 4]]))
    storage.add(np.array([0]), np.array([7]), np.array([[-1], [-1], [-5], [-4]]))  # back to zero
    rows, ids, values = storage.entries(10)
    assert list(zip(rows.tolist(), ids.tolist())) == [(1, 3)]
    assert values[:, 0].tolist() == [2, 1, 5, 3]


def test_set_columns_overwrites_and_zeroes(storage: DenseMatrix | SparseMatrix) -> None:
    storage.add(np.array([0, 1]), np.array([4, 4]), np.array([[3, 3], [1, 1], [1, 1], [2, 2]]))
    storage.set_columns(
        np.array([1, 0]),
        np.array([4, 6]),
        np.array([[[9, 0], [0, 2]], [[1, 0], [0, 1]], [[7, 0], [0, 8]], [[-1, 0], [0, 6]]]),
    )
    N, DF, _, W = storage.columns(np.array([4, 6]))
    assert N.tolist() == [[0, 2], [9, 0], [0, 0]] and DF.tolist() == [[0, 1], [1, 0], [0, 0]]
    assert W.tolist() == [[0, 6], [-1, 0], [0, 0]]


def test_sparse_storage_never_stores_pairs_only_to_hold_zeros() -> None:
    s = SparseMatrix()
    s.add_class()
    s.add_class()
    s.set_columns(np.array([0, 1]), np.array([3]), np.zeros((4, 2, 1), dtype=np.int64))
    assert s.n_pairs == 0


def test_increments_may_come_as_separate_arrays(storage: DenseMatrix | SparseMatrix) -> None:
    rows, ids = np.array([0, 2, 2]), np.array([5, 5, 1])
    one, zero = np.broadcast_to(np.int64(1), (3,)), np.broadcast_to(np.int64(0), (3,))
    storage.add(rows, ids, (np.array([1, 2, 3]), one, np.array([7, 8, 9]), zero))
    N, DF, T, _ = storage.columns(np.array([5, 1]))
    assert N.tolist() == [[1, 0], [0, 0], [2, 3]] and DF.tolist() == [[1, 0], [0, 0], [1, 1]]
    assert T[2].tolist() == [8, 9]
