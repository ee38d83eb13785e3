"""Tests of the content pack, its search and the answers made from it."""
