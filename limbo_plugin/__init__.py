"""Limbo: measure duplicate side effects of tool-using agents under ambiguous tool failures.

The package is layered as ``agent ∘ conditions ∘ fault transport ∘ world``; the tool-call API in
:mod:`limbo_plugin.toolapi` is the one seam every layer shares, and
:class:`limbo_plugin.records.EpisodeRecord` is the one record every reporter reads.
"""

__version__ = "0.1.0"
