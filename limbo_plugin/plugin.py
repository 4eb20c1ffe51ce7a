"""pytest plugin wiring (entry point ``pytest11``): options, collection, reporting."""
