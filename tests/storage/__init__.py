"""Tests of the database, the KV store and the migrations."""
