"""Tests of the foundation: settings and their reference."""
