"""Reports and analyses of a results directory."""
