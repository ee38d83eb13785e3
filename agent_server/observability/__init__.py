"""Observability: request metrics, counts shared between workers, Prometheus, traces and logs."""
