"""Tests of metrics, Prometheus, traces and logs."""
