"""Serving helpers: a loopback OpenAI-compatible chat server (tests, demos, the contract suite)."""
