"""``python -m limbo_plugin.cli``: the ``limbo`` command without the installed script."""

from limbo_plugin.cli import console_main

raise SystemExit(console_main())
