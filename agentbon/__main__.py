from agentbon.cli import main

main()
