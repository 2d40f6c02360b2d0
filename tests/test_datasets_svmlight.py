"""Tests of treeboost.datasets.read_svmlight and of load() on svmlight / LibSVM files.

Small files are written into tmp_path; the real-data test reads LightGBM's ranking
example in ../shared/datasets/ranking (skipped when that folder is absent) and compares
with scikit-learn's reader and the .query files.
"""

import gzip
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from treeboost import Dataset
from treeboost.datasets import load, read_svmlight
from treeboost.datasets.svmlight import is_svmlight
from treeboost.exceptions import DataError

RANKING = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "ranking"

# Three queries (7, 3, 9) of sizes 2, 1, 3; one-based indices up to 4.
QID_TEXT = """\
# a comment line, then a blank one

2 qid:7 1:0.5 3:-1   # trailing comment
0 qid:7 2:2
1 qid:3 4:1e-3
3 qid:9 1:1 2:2 3:3 4:4
0 qid:9
1 qid:9 3:nan
"""
QID_X = np.array([
    [0.5, 0.0, -1.0, 0.0],
    [0.0, 2.0, 0.0, 0.0],
    [0.0, 0.0, 0.0, 1e-3],
    [1.0, 2.0, 3.0, 4.0],
    [0.0, 0.0, 0.0, 0.0],
    [0.0, 0.0, np.nan, 0.0],
])
QID_Y = np.array([2.0, 0.0, 1.0, 3.0, 0.0, 1.0])


def _write(path, text):
    path.write_bytes(text.encode("ascii"))
    return path


def _assert_read(result, X, y, group):
    got_X, got_y, got_group = result
    assert isinstance(got_X, sp.csr_matrix)
    assert got_X.dtype == np.float64
    np.testing.assert_array_equal(got_X.toarray(), X)  # NaN equal to NaN here
    assert got_y.dtype == np.float64
    np.testing.assert_array_equal(got_y, y)
    if group is None:
        assert got_group is None
    else:
        assert got_group.dtype == np.int64
        np.testing.assert_array_equal(got_group, group)


def test_qid_groups_comments_and_blank_lines(tmp_path):
    path = _write(tmp_path / "q.svm", QID_TEXT)
    _assert_read(read_svmlight(path), QID_X, QID_Y, [2, 1, 3])


def test_crlf_and_tabs(tmp_path):
    path = tmp_path / "q.svm"
    path.write_bytes(QID_TEXT.replace(" 1:", "\t1:").replace("\n", "\r\n").encode())
    _assert_read(read_svmlight(path), QID_X, QID_Y, [2, 1, 3])


def test_query_file_companion(tmp_path):
    text = re.sub(r" qid:\d+", "", QID_TEXT)
    path = _write(tmp_path / "rank.train", text)
    _write(tmp_path / "rank.train.query", "2\n1\n3\n\n")  # a trailing blank line is fine
    _assert_read(read_svmlight(path), QID_X, QID_Y, [2, 1, 3])


def test_no_queries(tmp_path):
    path = _write(tmp_path / "plain.svm", "1 2:3\n0 1:1\n")
    _assert_read(read_svmlight(path), [[0.0, 3.0], [1.0, 0.0]], [1.0, 0.0], None)


def test_gzip(tmp_path):
    path = tmp_path / "q.svm.gz"
    path.write_bytes(gzip.compress(QID_TEXT.encode()))
    _assert_read(read_svmlight(path), QID_X, QID_Y, [2, 1, 3])
    _, _, group = load(path, return_group=True)
    np.testing.assert_array_equal(group, [2, 1, 3])


@pytest.mark.parametrize(("zero_based", "text", "X"), [
    ("auto", "1 1:5 3:6\n", [[5.0, 0.0, 6.0]]),  # no index 0: one-based
    ("auto", "1 0:5 2:6\n", [[5.0, 0.0, 6.0]]),  # an index 0: zero-based
    (False, "1 1:5 3:6\n", [[5.0, 0.0, 6.0]]),
    (True, "1 1:5 3:6\n", [[0.0, 5.0, 0.0, 6.0]]),  # column 0 never set
    (True, "1 0:5 2:6\n", [[5.0, 0.0, 6.0]]),
])
def test_index_base(tmp_path, zero_based, text, X):
    path = _write(tmp_path / "b.svm", text)
    _assert_read(read_svmlight(path, zero_based=zero_based), X, [1.0], None)


def test_n_features(tmp_path):
    path = _write(tmp_path / "w.svm", "1 1:5\n\n0 3:6\n")
    # no index 0 and every index below n_features: either base fits, and the reader says so
    with pytest.warns(UserWarning, match=r"w\.svm: never uses feature index 0"):
        X, _, _ = read_svmlight(path, n_features=5)
    np.testing.assert_array_equal(X.toarray(), [[5.0, 0, 0, 0, 0], [0, 0, 6.0, 0, 0]])
    with pytest.raises(DataError, match=r"w\.svm: line 3: feature index 3 is beyond "
                                        r"n_features=2"):
        read_svmlight(path, n_features=2)
    # The index as written in the file, whatever the base.
    with pytest.raises(DataError, match=r"w\.svm: line 3: feature index 3 is beyond "
                                        r"n_features=3"):
        read_svmlight(path, n_features=3, zero_based=True)


@pytest.mark.parametrize(("kwargs", "what"), [
    ({"zero_based": "yes"}, "zero_based must be"),
    ({"zero_based": 1}, "zero_based must be"),
    ({"n_features": 0}, "n_features must be"),
    ({"n_features": 2.0}, "n_features must be"),
])
def test_bad_arguments(tmp_path, kwargs, what):
    path = _write(tmp_path / "a.svm", "1 1:1\n")
    with pytest.raises(ValueError, match=what):
        read_svmlight(path, **kwargs)


def test_round_trip_with_sklearn_dump(tmp_path):
    rng = np.random.default_rng(0)
    # Four decimals: exact through the "%.16g" that dump_svmlight_file writes.
    X = np.round(rng.normal(size=(40, 7)), 4) * (rng.random((40, 7)) < 0.4)
    y = rng.integers(0, 5, size=40).astype(np.float64)
    qid = np.repeat([4, 1, 9, 2], [10, 5, 20, 5])
    for zero_based in (True, False):
        path = tmp_path / f"dump{zero_based}.svmlight"
        dump_svmlight_file(X, y, str(path), zero_based=zero_based, query_id=qid)
        got_X, got_y, group = read_svmlight(path, n_features=7, zero_based=zero_based)
        np.testing.assert_array_equal(got_X.toarray(), X)
        np.testing.assert_array_equal(got_y, y)
        np.testing.assert_array_equal(group, [10, 5, 20, 5])
    path = tmp_path / "dump.libsvm"
    dump_svmlight_file(sp.csr_matrix(X), y, str(path))  # one-based, no queries
    got_X, got_y, group = load(path, return_group=True)
    sk_X, sk_y = load_svmlight_file(str(path))
    assert group is None
    assert got_X.shape == sk_X.shape
    np.testing.assert_array_equal(got_X.toarray(), sk_X.toarray())
    np.testing.assert_array_equal(got_y, sk_y)


@pytest.mark.parametrize(("text", "line", "what"), [
    ("1 1:1\nx 1:2\n", 2, "label 'x' is not a number"),
    ("1,2 1:1\n", 1, "label '1,2' is not a number"),
    ("# c\n\n1 1:1 2\n", 3, "expected index:value, found '2'"),
    ("1 1:1\n1 a:2\n", 2, "feature index 'a' in 'a:2' is not an integer"),
    ("1 1:1\n1 1.5:2\n", 2, "feature index '1.5'"),
    ("1 1:x\n", 1, "value 'x' of feature 1 is not a number"),
    ("1 1:\n", 1, "value '' of feature 1 is not a number"),
    ("1 3:1 2:1\n", 1, "feature indices must increase along a line: 2 comes after 3"),
    ("1 2:1 2:1\n", 1, "feature indices must increase along a line: 2 comes after 2"),
    ("1 -1:1\n", 1, "negative feature index -1"),
    ("1 99999999999:1\n", 1, "feature index 99999999999 is too large"),
    ("1 1:1 qid:3\n", 1, "'qid:3' must come right after the label"),
    ("1 qid:1 1:1\n1 qid:x 1:1\n", 2, "'qid:x' is not qid:<integer>"),
    ("1 qid 1:1\n", 1, "'qid' is not qid:<integer>"),
    ("1 qid:1 1:1\n0 qid:1 1:1\n1 2:1\n", 3, "has no qid: token, unlike line 1"),
    ("1 2:1\n1 qid:1 2:1\n", 2, "has a qid: token, unlike line 1"),
    ("1 qid:1 1:1\n0 qid:2 1:1\n\n1 qid:1 2:1\n", 4,
     r"qid 1 again after other queries \(its rows ended at line 1\)"),
])
def test_malformed_line(tmp_path, text, line, what):
    path = _write(tmp_path / "bad.svm", text)
    with pytest.raises(DataError, match=f"bad\\.svm: line {line}: {what}"):
        read_svmlight(path)
    with pytest.raises(DataError, match=f"bad\\.svm: line {line}: {what}"):
        load(path)


def test_index_zero_in_one_based_file(tmp_path):
    path = _write(tmp_path / "z.svm", "1 1:1\n\n0 0:1 2:3\n")
    with pytest.raises(DataError, match=r"z\.svm: line 3: feature index 0 in a one-based"):
        read_svmlight(path, zero_based=False)


def test_qid_and_query_file(tmp_path):
    path = _write(tmp_path / "q.svm", QID_TEXT)
    _write(tmp_path / "q.svm.query", "2\n1\n3\n")
    with pytest.raises(DataError, match=r"q\.svm: has qid: tokens and .*q\.svm\.query"):
        read_svmlight(path)


@pytest.mark.parametrize(("query", "what"), [
    ("2\n1\n2\n", r"q\.svm\.query: the query sizes add up to 5 rows, but .*q\.svm has 6"),
    ("2\n1\n3\n1\n", r"q\.svm\.query: the query sizes add up to 7 rows, but .*q\.svm has 6"),
    ("2\n0\n4\n", r"q\.svm\.query: line 2: '0' is not a positive query size"),
    ("2\n1.5\n", r"q\.svm\.query: line 2: '1.5' is not a positive query size"),
])
def test_bad_query_file(tmp_path, query, what):
    path = _write(tmp_path / "q.svm", re.sub(r" qid:\d+", "", QID_TEXT))
    _write(tmp_path / "q.svm.query", query)
    with pytest.raises(DataError, match=what):
        read_svmlight(path)


def test_missing_and_bad_gzip(tmp_path):
    with pytest.raises(DataError, match=r"absent\.svm: no such file"):
        read_svmlight(tmp_path / "absent.svm")
    with pytest.raises(DataError, match=r"absent\.svm: no such file"):
        load(tmp_path / "absent.svm")
    path = _write(tmp_path / "b.svm.gz", "1 1:1\n")
    with pytest.raises(DataError, match=r"b\.svm\.gz: not a readable gzip file"):
        read_svmlight(path)


@pytest.mark.parametrize("name", ["d.svm", "d.svmlight", "d.libsvm", "D.LIBSVM", "d.svm.gz",
                                  "rank.train", "data.txt", "data.txt.gz"])
def test_load_dispatch_and_sniffing(tmp_path, name):
    path = tmp_path / name
    data = b"# header comment\n\n2 qid:1 1:0.5\n1 qid:1 2:1\n"
    path.write_bytes(gzip.compress(data) if name.lower().endswith(".gz") else data)
    X, y = load(path)
    assert isinstance(X, sp.csr_matrix)
    np.testing.assert_array_equal(X.toarray(), [[0.5, 0.0], [0.0, 1.0]])
    np.testing.assert_array_equal(y, [2.0, 1.0])
    X, y, group = load(path, return_group=True)
    np.testing.assert_array_equal(group, [2])


@pytest.mark.parametrize("text", [
    "a,b,c\n1,2,3\n",  # CSV with a header
    "1,2,3\n4,5,6\n",  # CSV without one
    "1 2 3\n",  # whitespace-separated numbers
    "1\n2\n",  # a label with nothing after it
    "# only comments\n\n",
    "",
    "label 1:2\n",
    "1 x:2\n",
])
def test_suffixless_non_svmlight_is_unknown(tmp_path, text):
    path = _write(tmp_path / "data.txt", text)
    assert not is_svmlight(path)
    with pytest.raises(DataError, match=r"data\.txt: unknown file type; expected one of "
                                        r".*\.libsvm.*first data line reads as svmlight"):
        load(path)


def test_unknown_type_of_missing_file(tmp_path):
    with pytest.raises(DataError, match=r"unknown file type \(and no such file\)"):
        load(tmp_path / "rank.absent")


@pytest.mark.parametrize(("line", "expected"), [
    (b"0 1:1", True),
    (b"-1.5e3 qid:-2 10:.5 11:nan", True),
    (b"3 qid:4", True),  # qid, no pairs: still svmlight
    (b"  +1\t7:1e-3   # comment", True),
    (b"3", False),
    (b"3 qid:4.5 1:1", False),
    (b"1 1:a", False),
    (b"1;1:2", False),
])
def test_is_svmlight(tmp_path, line, expected):
    path = tmp_path / "f"
    path.write_bytes(b"# c\n\n" + line + b"\n2 garbage\n")
    assert is_svmlight(path) is expected


def test_is_svmlight_long_first_line(tmp_path):
    # Longer than the bytes sniffed: judged on the tokens read whole.
    path = tmp_path / "wide"
    path.write_bytes(b"1 " + b" ".join(b"%d:0.123456" % i for i in range(1, 20000)) + b"\n")
    assert is_svmlight(path)
    np.testing.assert_array_equal(load(path)[0].shape, (1, 19999))


def test_load_svmlight_rejects_target(tmp_path):
    path = _write(tmp_path / "t.svm", "1 1:1\n")
    with pytest.raises(DataError, match=r"t\.svm: target='label' does not apply"):
        load(path, target="label")


def test_load_return_group_for_csv():
    data = Path(__file__).resolve().parent / "data"
    X, y, group = load(data / "tiny.csv", target="label", return_group=True)
    assert group is None
    assert X.shape == (4, 4)


@pytest.mark.parametrize("part", ["train", "test"])
def test_lightgbm_ranking_example(part):
    if not RANKING.is_dir():
        pytest.skip(f"{RANKING} not found")
    path = RANKING / f"rank.{part}"
    sizes = np.loadtxt(RANKING / f"rank.{part}.query", dtype=np.int64, ndmin=1)
    X, y, group = load(path, return_group=True)  # no suffix: sniffed
    sk_X, sk_y = load_svmlight_file(str(path), n_features=X.shape[1])
    assert X.shape[0] == sizes.sum() == {"train": 3005, "test": 768}[part]
    assert len(group) == len(sizes) == {"train": 201, "test": 50}[part]
    np.testing.assert_array_equal(group, sizes)
    assert X.shape == sk_X.shape
    assert (X != sk_X).nnz == 0
    np.testing.assert_array_equal(y, sk_y)
    assert set(np.unique(y)) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    np.testing.assert_array_equal(Dataset(X, y, group=group).group_sizes, sizes)
