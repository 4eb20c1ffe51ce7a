"""The simulated world: a virtual clock, an effect ledger and six services, all pure Python.

The package itself imports nothing, so that the record can use the ledger's ``Effect`` without
loading the world (and its JSON-schema validation) wherever records are read.
"""
