"""Tests of the capability registry."""
