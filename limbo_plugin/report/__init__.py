"""Reporters. Every one reads :class:`~limbo_plugin.records.EpisodeRecord`; none re-grades."""
