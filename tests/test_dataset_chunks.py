"""``Dataset.from_chunks``: a binned Dataset built chunk by chunk trains the in-memory model.

Data that fits the bin sample gives the model of the concatenated data bit for bit (the
predictions and the model file text), whatever the chunking (1-row, uneven, memory-mapped
``.npy`` chunks, float32) and with NaN, a categorical column, weights, query groups and a
validation set. Larger data is binned as ``BinMapper.fit`` bins it in memory: the same
sampled rows, the categories of every row. Then the binned file, and every refusal.
"""

from __future__ import annotations

import numpy as np
import pytest

from treeboost import Dataset, train
from treeboost.binning import BinMapper
from treeboost.serialization import save_booster

PARAMS = {"n_estimators": 12, "random_state": 0, "max_leaf_nodes": 8}


def _data(n=600, seed=0):
    """Numerical columns with NaN and a categorical column 2 with rare categories."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[:, 2] = rng.choice(8, size=n, p=[0.3, 0.2, 0.2, 0.1, 0.1, 0.05, 0.04, 0.01])
    X[:, 4] = np.round(X[:, 4], 1)  # few distinct values: exact midpoints
    y = X[:, 0] + (X[:, 2] == 3) - 0.5 * X[:, 1] ** 2 + rng.normal(scale=0.2, size=n)
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, y


def _split(X, sizes):
    """X cut into consecutive chunks of ``sizes`` rows (the last takes the rest)."""
    bounds = np.cumsum([0, *sizes])
    return [X[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)] + [X[bounds[-1]:]]


def _text(booster, path):
    save_booster(booster, path)
    return path.read_text()


def _same_model(a, b, X, tmp_path):
    np.testing.assert_array_equal(a.predict_raw(X), b.predict_raw(X))
    assert _text(a, tmp_path / "a.json") == _text(b, tmp_path / "b.json")


CHUNKINGS = {"one": [], "rows_of_one": [1] * 599, "uneven": [1, 7, 250, 3, 100],
             "halves": [300]}


@pytest.mark.parametrize("chunking", CHUNKINGS)
def test_chunked_model_equals_the_in_memory_model(chunking, tmp_path):
    X, y = _data()
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=y.size)
    chunks = _split(X, CHUNKINGS[chunking])
    assert sum(c.shape[0] for c in chunks) == X.shape[0]
    ds = Dataset.from_chunks(chunks, label=y, weight=w, categorical_features=[2])
    assert ds.constructed
    assert ds.data is None
    assert ds.n_features == 5
    mem = Dataset(X, y, weight=w, categorical_features=[2])
    _same_model(train(PARAMS, ds), train(PARAMS, mem), X, tmp_path)
    np.testing.assert_array_equal(ds.binned, mem.binned)


def test_binary_classification_from_a_callable_over_memmapped_npy_chunks(tmp_path):
    X, y = _data(900)
    label = (y > 0).astype(float)
    paths = []
    for i, chunk in enumerate(_split(X, [200, 333, 1])):
        paths.append(tmp_path / f"chunk{i}.npy")
        np.save(paths[-1], chunk)

    def chunks():
        return (np.load(p, mmap_mode="r") for p in paths)

    params = {**PARAMS, "loss": "log_loss"}
    ds = Dataset.from_chunks(chunks, label=label, categorical_features=[2])
    _same_model(train(params, ds), train(params, Dataset(X, label, categorical_features=[2])),
                X, tmp_path)
    # slices of one memory-mapped file, without a label: the rows are counted first
    np.save(tmp_path / "all.npy", X)
    whole = np.load(tmp_path / "all.npy", mmap_mode="r")
    unlabelled = Dataset.from_chunks([whole[:450], whole[450:]], categorical_features=[2])
    np.testing.assert_array_equal(unlabelled.binned, ds.binned)


def test_float32_chunks_bin_like_the_float32_matrix(tmp_path):
    X, y = _data()
    X32 = X.astype(np.float32)
    ds = Dataset.from_chunks(_split(X32, [100, 17]), label=y)
    _same_model(train(PARAMS, ds), train(PARAMS, Dataset(X32, y)), X32, tmp_path)


def test_lambdarank_groups_across_chunk_boundaries(tmp_path):
    rng = np.random.default_rng(3)
    group = rng.integers(3, 15, size=40)
    n = int(group.sum())
    X = rng.normal(size=(n, 4))
    y = np.clip(np.round(X[:, 0] + rng.normal(scale=0.5, size=n)) + 1, 0, 3)
    params = {**PARAMS, "loss": "lambdarank"}
    ds = Dataset.from_chunks(_split(X, [5, 61, 2]), label=y, group=group)
    _same_model(train(params, ds), train(params, Dataset(X, y, group=group)), X, tmp_path)
    # query ids per row give the same groups
    qid = np.repeat(np.arange(group.size), group)
    by_qid = Dataset.from_chunks(_split(X, [77]), label=y, qid=qid)
    np.testing.assert_array_equal(by_qid.group_offsets, ds.group_offsets)


def test_validation_set_from_chunks_with_reference(tmp_path):
    X, y = _data(800)
    Xv, yv = X[600:], y[600:]
    X, y = X[:600], y[:600]
    params = {**PARAMS, "eval_metric": ["rmse"]}
    train_chunks = Dataset.from_chunks(_split(X, [123]), label=y, categorical_features=[2])
    valid_chunks = Dataset.from_chunks(_split(Xv, [50, 1]), label=yv, reference=train_chunks)
    assert valid_chunks.bin_mapper is train_chunks.bin_mapper
    a = train(params, train_chunks, valid_sets=[valid_chunks])
    train_mem = Dataset(X, y, categorical_features=[2])
    b = train(params, train_mem, valid_sets=[Dataset(Xv, yv, reference=train_mem)])
    assert a.evals_result == b.evals_result
    _same_model(a, b, Xv, tmp_path)


# ---- more rows than the sample -------------------------------------------------------------
def test_more_rows_than_the_sample_bin_like_binmapper_fit():
    X, y = _data(5000, seed=2)
    X[4321, 2] = 9.0  # a category of one row, almost surely outside the sample
    ds = Dataset.from_chunks(_split(X, [999, 1, 1700]), label=y, categorical_features=[2],
                             sample_rows=1000, random_state=7)
    fitted = BinMapper(subsample=1000, random_state=7, is_categorical=ds.is_categorical).fit(X)
    for name in ("bin_edges_", "n_edges_", "has_missing_", "n_bins_non_missing_"):
        np.testing.assert_array_equal(getattr(ds.bin_mapper, name), getattr(fitted, name))
    np.testing.assert_array_equal(ds.binned, fitted.transform(X))
    # the numerical edges come from 1000 rows, those BinMapper.fit draws, ...
    rows = np.sort(np.random.default_rng(7).choice(5000, 1000, replace=False))
    assert 4321 not in rows
    on_sample = BinMapper(is_categorical=ds.is_categorical).fit(X[rows])
    numerical = [0, 1, 3, 4]
    width = on_sample.bin_edges_.shape[1]
    np.testing.assert_array_equal(ds.bin_mapper.bin_edges_[numerical, :width],
                                  on_sample.bin_edges_[numerical])
    # ... the categories from every row: the rare one keeps its bin
    assert 9.0 in ds.bin_mapper.bin_edges_[2]
    assert 9.0 not in on_sample.bin_edges_[2]


def test_more_rows_than_the_default_sample_bin_like_the_in_memory_dataset():
    # past BIN_SUBSAMPLE rows an in-memory Dataset with the same random_state draws
    # the same rows
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200_500, 2))
    X[:, 1] = rng.integers(0, 50, size=X.shape[0])
    sampled = np.random.default_rng(11).choice(X.shape[0], 200_000, replace=False)
    X[np.setdiff1d(np.arange(X.shape[0]), sampled)[0], 1] = 77.0  # a row not sampled
    y = X[:, 0]
    chunks = Dataset.from_chunks(_split(X, [100_000, 7]), label=y, categorical_features=[1],
                                 random_state=11)
    mem = Dataset(X, y, categorical_features=[1], random_state=11).construct()
    np.testing.assert_array_equal(chunks.bin_mapper.bin_edges_, mem.bin_mapper.bin_edges_)
    np.testing.assert_array_equal(chunks.binned, mem.binned)
    assert 77.0 in chunks.bin_mapper.bin_edges_[1]


def test_more_rows_than_the_sample_is_deterministic_for_a_seed():
    X, y = _data(5000, seed=2)
    chunks = _split(X, [2500])

    def edges(seed):
        return Dataset.from_chunks(chunks, label=y, sample_rows=1000,
                                   random_state=seed).bin_mapper.bin_edges_

    np.testing.assert_array_equal(edges(5), edges(5))
    assert not np.array_equal(edges(5), edges(6))


def test_given_bin_mapper_trains_the_in_memory_model_and_reads_a_generator_once(tmp_path):
    X, y = _data(5000, seed=4)
    bins = Dataset.from_chunks(_split(X, [1000]), label=y, sample_rows=1000,
                               random_state=0).bin_mapper
    mem = train(PARAMS, Dataset(X, y).construct(bins))
    chunks = Dataset.from_chunks(_split(X, [1234, 1]), label=y, bin_mapper=bins)
    assert chunks.bin_mapper is bins
    _same_model(train(PARAMS, chunks), mem, X, tmp_path)
    # with the bins given one pass suffices: a generator is read once
    once = Dataset.from_chunks((X[i:i + 700] for i in range(0, 5000, 700)), label=y,
                               bin_mapper=bins)
    np.testing.assert_array_equal(once.binned, chunks.binned)


# ---- the binned file -----------------------------------------------------------------------
def test_binned_path_holds_the_bins_and_is_never_overwritten(tmp_path):
    X, y = _data()
    path = tmp_path / "bins.npy"
    ds = Dataset.from_chunks(_split(X, [250]), label=y, binned_path=path)
    assert isinstance(ds.binned, np.memmap)
    reopened = np.load(path)
    assert reopened.dtype == np.uint8
    assert reopened.shape == (5, 600)
    np.testing.assert_array_equal(reopened, Dataset(X, y).construct().binned)
    _same_model(train(PARAMS, ds), train(PARAMS, Dataset(X, y)), X, tmp_path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="binned_path .* exists"):
        Dataset.from_chunks(_split(X, [250]), label=y, binned_path=path)
    assert path.read_bytes() == before


def test_binned_path_is_removed_when_binning_fails(tmp_path):
    X, y = _data()
    X[500, 1] = np.inf
    path = tmp_path / "bins.npy"
    with pytest.raises(ValueError, match="chunk 1 contains infinity"):
        Dataset.from_chunks(_split(X, [300]), label=y, binned_path=path)
    assert not path.exists()


# ---- refusals ------------------------------------------------------------------------------
def test_refusals_name_the_argument():
    X, y = _data(100)
    with pytest.raises(ValueError, match="chunks: chunk 1 has 4 columns, the first chunk has 5"):
        Dataset.from_chunks([X[:50], X[50:, :4]], label=y)
    with pytest.raises(ValueError, match="chunks is empty"):
        Dataset.from_chunks([], label=y)
    with pytest.raises(ValueError, match="chunks hold no rows"):
        Dataset.from_chunks([X[:0]])
    with pytest.raises(ValueError, match="chunks is a one-shot iterator.*bin_mapper="):
        Dataset.from_chunks((c for c in [X[:50], X[50:]]), label=y)
    with pytest.raises(ValueError, match="label has 99 entries but the chunks hold more"):
        Dataset.from_chunks([X[:50], X[50:]], label=y[:99])
    with pytest.raises(ValueError, match="label has 101 entries but the chunks hold 100 rows"):
        Dataset.from_chunks([X[:50], X[50:]], label=np.append(y, 0.0))
    with pytest.raises(ValueError, match="weight must have one entry per row"):
        Dataset.from_chunks([X[:50], X[50:]], label=y, weight=np.ones(99))
    with pytest.raises(ValueError, match="chunks: chunk 0 must be a 2-D matrix"):
        Dataset.from_chunks([X[0], X[1:]], label=y)
    with pytest.raises(TypeError, match="not one array"):
        Dataset.from_chunks(X, label=y)
    bins = Dataset(X, y).construct().bin_mapper
    with pytest.raises(ValueError, match="chunk 0 has 4 columns, the bins have 5"):
        Dataset.from_chunks([X[:, :4]], label=y, bin_mapper=bins)
    with pytest.raises(ValueError, match="one-shot iterator.*number of rows"):
        Dataset.from_chunks(iter([X]), bin_mapper=bins)


def test_a_callable_giving_other_rows_in_another_pass_is_refused():
    X, y = _data(100)
    calls = []

    def chunks():
        calls.append(1)
        return iter([X] if len(calls) < 3 else [X, X[:1]])

    # without a row array: count the rows, sample, then bin (the third call)
    with pytest.raises(ValueError, match="chunks gave 100 rows in one pass and more than"):
        Dataset.from_chunks(chunks)


@pytest.mark.parametrize("kind", ["array", "dataframe"])
def test_dask_collection_is_binned_block_by_block(kind, tmp_path):
    """A dask array (row chunks, split columns too) or dataframe: its blocks computed one
    at a time in each pass, and the in-memory model, bit for bit."""
    da = pytest.importorskip("dask.array")
    X, y = _data()
    if kind == "array":
        chunks = da.from_array(X, chunks=(170, 3))
    else:
        dd = pytest.importorskip("dask.dataframe")
        pd = pytest.importorskip("pandas")
        chunks = dd.from_pandas(pd.DataFrame(X), npartitions=4)
    ds = Dataset.from_chunks(chunks, label=y, categorical_features=[2])
    mem = Dataset(X, y, categorical_features=[2])
    _same_model(train(PARAMS, ds), train(PARAMS, mem), X, tmp_path)
    with pytest.raises(ValueError, match="must be 2-D"):
        Dataset.from_chunks(da.from_array(y, chunks=100), label=y)
