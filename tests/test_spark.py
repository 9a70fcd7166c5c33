"""The Spark recipe of docs/guides/scale-out.md: cell-addressed noise inside mapInPandas on a
Spark DataFrame of (cell, count) rows, in shuffled partitions, equals dpfast.noisy_counts with
the same seed.
Runs where pyspark and a Java runtime are present; skipped, with the reason, elsewhere."""
import shutil
import sys

import numpy as np
import pandas as pd
import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (the Spark recipe "
                                                "is tested where it is)")
if shutil.which("java") is None:
    pytest.skip("no Java runtime for Spark", allow_module_level=True)

import dpfast as dp  # noqa: E402
from dpfast.releases.cells import noisy_cells_at, release_key  # noqa: E402


def test_spark_recipe_equals_noisy_counts(monkeypatch):
    from pyspark.sql import SparkSession
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)    # workers need dpfast too
    spark = (SparkSession.builder.master("local[2]").appName("dpfast-test")
             .config("spark.ui.enabled", "false").getOrCreate())
    try:
        x = np.random.default_rng(0).poisson(5, 50_000)
        want = dp.noisy_counts(x, epsilon=1.0, accountant=dp.Accountant(), rng=41)
        rows = spark.createDataFrame(pd.DataFrame({"cell": np.arange(x.size), "count": x}))
        rows = rows.repartition(7)                          # shuffled partitions
        # The recipe: charge and draw the key on the driver, noise in the partitions.
        key = release_key("noisy_counts", dp.Accountant(), 1.0, 41)
        scale = 1.0 / 1.0

        def noise(batches):
            for pdf in batches:
                pdf["noisy"] = noisy_cells_at(key, pdf["cell"].to_numpy(),
                                              pdf["count"].to_numpy(), scale)
                yield pdf
        out = rows.mapInPandas(noise, schema="cell long, count long, noisy long").toPandas()
        got = out.sort_values("cell")["noisy"].to_numpy()
        assert np.array_equal(got, want)
    finally:
        spark.stop()


# The recipe for a group-by (docs/guides/scale-out.md): an engine (dpfast.pieces.Engine) over a
# Spark DataFrame, whose partitions are the pieces.
# noqa: E306,E731 -- the class below is the guide's recipe, as written there.
class SparkPieces:                                       # a dpfast.pieces.Engine
    def __init__(self, df):
        self.df, self.meta = df, df.limit(0).toPandas()

    def _pieces(self, step, schema):                     # step(partition, its rows)
        meta = self.meta                                 # the workers get no df, no session
        def run(batches):
            from pyspark import TaskContext
            got = list(batches)
            yield step(TaskContext.get().partitionId(), pd.concat(got) if got else meta)
        return self.df.mapInPandas(run, schema)

    def map(self, fn):
        step = lambda i, piece: pd.DataFrame({"out": [fn(i, piece)]})
        return [r.out for r in self._pieces(step, "out binary").collect()]

    def shuffle(self, split, combine):
        def step(i, piece):
            pairs = split(i, piece)
            return pd.DataFrame({"bucket": [b for b, _ in pairs], "blob": [x for _, x in pairs]})
        each = lambda key, pdf: pd.DataFrame({"out": [combine(int(key[0]), list(pdf["blob"]))]})
        return [r.out for r in self._pieces(step, "bucket long, blob binary")
                .groupBy("bucket").applyInPandas(each, "out binary").collect()]


def test_spark_group_by_recipe_equals_group_by(monkeypatch):
    from pyspark.sql import SparkSession

    from dpfast import pieces
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").appName("dpfast-test")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", "3000").getOrCreate())
    try:
        gen = np.random.default_rng(1)
        n = 30_000
        rows = pd.DataFrame({"dept": gen.integers(0, 50, n), "user": gen.integers(0, 4_000, n),
                             "salary": gen.uniform(0.0, 100.0, n)})
        kw = dict(n="count", avg=("salary", "mean"), med=("salary", "median"),
                  bounds={"salary": (0.0, 100.0)}, epsilon=1.0, delta=1e-6, rng=5)
        want = dp.group_by(rows, "dept", privacy_unit="user", max_rows=3).agg(
            accountant=dp.Accountant(epsilon=1.0, delta=1e-6), **kw)
        df = spark.createDataFrame(rows).repartition(1).coalesce(1)   # one piece, in order
        for frame in (spark.createDataFrame(rows), df):
            engine = SparkPieces(frame)
            got = pieces.group_by(engine, engine.meta, "dept", privacy_unit="user",
                                  max_rows=3).agg(
                accountant=dp.Accountant(epsilon=1.0, delta=1e-6), **kw)
            pd.testing.assert_frame_equal(got, want, check_exact=True)
    finally:
        spark.stop()
