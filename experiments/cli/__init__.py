"""The command line (the top layer): argument parsing, one-line errors, progress."""
