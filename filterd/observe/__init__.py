"""Observability: structured logs (`logs`), Prometheus metrics (`metrics`), health and
readiness (`health`), and the HTTP server that answers /metrics, /healthz and /readyz (`server`)."""
