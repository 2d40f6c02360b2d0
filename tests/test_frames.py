"""Arrow-backed pandas columns, polars frames and pyarrow tables (issue 3)."""

import numpy as np
import pandas as pd
import pytest

from treeboost import TreeBoostClassifier

pa = pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 800
    frame = pd.DataFrame({
        "city": pd.Categorical(rng.choice(["ams", "ber", "cph", "dub", "edi", "fra"], n)),
        "size": rng.normal(size=n),
        "flag": pd.array(rng.random(n) < 0.5, dtype="boolean"),
        "count": pd.array(rng.integers(0, 9, n), dtype="Int64"),
    })
    frame.loc[rng.random(n) < 0.1, "count"] = pd.NA
    frame.loc[rng.random(n) < 0.1, "city"] = None
    y = (frame.city.isin(["ber", "dub"]).to_numpy() ^ (frame["size"] > 0.8)).astype(int)
    return frame, y


def to_arrow_backed(frame):
    out = frame.copy()
    city = pa.array(frame.city.astype(object).where(frame.city.notna(), None).tolist(),
                    type=pa.string()).dictionary_encode()
    out["city"] = pd.Series(pd.arrays.ArrowExtensionArray(city))
    out["size"] = frame["size"].astype("double[pyarrow]")
    out["flag"] = frame["flag"].astype("bool[pyarrow]")
    out["count"] = frame["count"].astype("int64[pyarrow]")
    return out


def test_arrow_backed_frame_gives_the_same_model(frame):
    numpy_frame, y = frame
    arrow = to_arrow_backed(numpy_frame)
    assert str(arrow.city.dtype).startswith("dictionary<")
    a = TreeBoostClassifier(n_estimators=20, random_state=0).fit(numpy_frame, y)
    b = TreeBoostClassifier(n_estimators=20, random_state=0).fit(arrow, y)
    assert b.is_categorical_.tolist() == [True, False, False, False]
    # the same category table (sorted values) and the same numbers: the same model
    assert a.pandas_categories_ == b.pandas_categories_
    np.testing.assert_array_equal(a.predict_proba(numpy_frame), b.predict_proba(arrow))
    np.testing.assert_array_equal(a.predict_proba(arrow), b.predict_proba(numpy_frame))


def test_polars_frame_and_arrow_table(frame):
    pl = pytest.importorskip("polars")
    numpy_frame, y = frame
    reference = TreeBoostClassifier(n_estimators=20, random_state=0).fit(numpy_frame, y)
    expected = reference.predict_proba(numpy_frame)
    polars_frame = pl.from_pandas(numpy_frame)
    assert polars_frame.schema["city"] == pl.Categorical
    model = TreeBoostClassifier(n_estimators=20, random_state=0).fit(polars_frame, y)
    assert list(model.feature_names_in_) == ["city", "size", "flag", "count"]
    np.testing.assert_array_equal(model.predict_proba(polars_frame), expected)
    table = pa.Table.from_pandas(numpy_frame, preserve_index=False)
    np.testing.assert_array_equal(model.predict_proba(table), expected)
    with pytest.raises(ValueError, match="feature names"):
        model.predict(polars_frame.select(["size", "city", "flag", "count"]))
