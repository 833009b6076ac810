"""`python -m trajectory_compressor` runs the command line."""

from trajectory_compressor.cli import main

main()
