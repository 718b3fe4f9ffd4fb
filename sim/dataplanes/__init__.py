"""Data planes: packets, control state, pipeline results, trees, seeds, and one
folder per P4 program family (codec + pass-by-pass reference model).

Importing this package registers nothing; :mod:`sim.dataplanes.catalog` imports
the families so that they register their reference models."""
