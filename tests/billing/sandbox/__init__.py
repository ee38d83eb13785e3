"""Tests of the sandbox payment provider."""
