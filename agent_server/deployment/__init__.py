"""Start-up checks of a deployment's shape."""
