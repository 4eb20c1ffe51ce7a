"""Root conftest: the plugin itself is registered through the ``pytest11`` entry point."""
