"""Model clients and servers: an OpenAI-compatible client, local launchers, vLLM engines as Ray actors."""
