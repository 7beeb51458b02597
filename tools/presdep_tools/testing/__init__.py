"""Test helpers (a loopback OpenAI-compatible chat server): for the tests and the reliability
harness only; the import contract (``lint-imports``) keeps every other module from using them."""
