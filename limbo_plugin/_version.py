"""The package's version, stated once: the distribution's metadata reads it from here
(``pyproject.toml``), the package root re-exports it, and ``limbo mcp`` announces it.

A module of its own, importing nothing, so that a module deep in the package can name the
version without importing the package root (which would import the public API above it)."""

__version__ = "0.1.0"
