"""Limbo's result carried to real MCP servers: ``limbo audit``, ``limbo proxy`` and ``limbo guard``.

- :mod:`~limbo_plugin.realmcp.audit` reads any server's tool listing as a retry contract (which
  writes carry a key, which can be read back, what the read path's lag is);
- :mod:`~limbo_plugin.realmcp.proxy` injects the benchmark's transport faults between a client
  and a server and logs what it forwarded, :mod:`~limbo_plugin.realmcp.proxy_report` reads that
  log as duplicates;
- :mod:`~limbo_plugin.realmcp.guard` puts the benchmark's guard (the same middleware as
  ``--condition guard``) in front of any server, configured from the audit.
"""
