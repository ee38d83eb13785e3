"""Tests of the internal JSON-RPC bridge."""
