"""The example configuration and the operations pack (systemd units, Prometheus rules, Grafana
dashboard), shipped inside the package as `filterd.examples` (`filterd config example`)."""
