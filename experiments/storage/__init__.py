"""Results on disk: the Parquet dataset."""
