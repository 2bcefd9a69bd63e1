"""``python -m agentbon``: the command line."""

from agentbon.cli import main

main()
