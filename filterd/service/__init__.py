"""The service contract: the public records, the configuration, and the decide path the daemon,
the CLI and the HTTP API share."""
