"""`python -m filterd …` is the `filterd` command."""

from filterd.cli import main

main()
