"""Spec loading: YAML with line marks, pydantic models, and the registry of every spec."""
