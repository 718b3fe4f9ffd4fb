"""Experiments: spec -> cells (``cells``), runners (``runners``), Parquet results
(``storage``), reports (``reports``), benchmarks (``bench``) and the command line
(``cli``, the top layer)."""
