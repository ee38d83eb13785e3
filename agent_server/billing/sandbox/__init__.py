"""The sandbox payment provider: the billing port kept in the database, with its own checkout."""
