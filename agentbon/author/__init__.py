"""Making tasks from real repositories (``agentbon tasks from-commit``): docs/authoring.md."""
