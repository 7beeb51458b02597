"""Adapters that let this package's scorers join other toolkits' pipelines (optional extras)."""
