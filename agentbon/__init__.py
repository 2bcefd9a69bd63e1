"""agentbon: best-of-N agentic coding rollouts as a batch job."""

__version__ = "0.1.0"
