"""The README's Spark recipe: cell-addressed noise inside mapInPandas on a Spark DataFrame of
(cell, count) rows, in shuffled partitions, equals dpfast.noisy_counts with the same seed.
Runs where pyspark and a Java runtime are present; skipped, with the reason, elsewhere."""
import shutil
import sys

import numpy as np
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
        import pandas as pd
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
