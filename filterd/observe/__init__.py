"""Observability: structured logs (`logs`), Prometheus metrics (`metrics`), health and
readiness (`health`), the HTTP server that answers /metrics, /healthz and /readyz (`server`),
and the connection cap that server shares with the HTTP API's (`connections`). `__all__` names
these modules rather than re-exporting their names: a user of the logs alone should not load
prometheus_client and the server."""

__all__ = ["connections", "health", "logs", "metrics", "server"]
