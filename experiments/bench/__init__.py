"""``stackcast bench``: speed figures beside same-run references."""
