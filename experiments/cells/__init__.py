"""The spec model and the one cell pipeline: spec -> cells -> rows."""
