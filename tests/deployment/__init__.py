"""Tests of the start-up checks of a deployment."""
