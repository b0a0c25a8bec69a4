"""The service contract: the public records, the configuration, and the decide path that the
daemon and the CLI share."""
