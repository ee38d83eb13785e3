"""The foundation every layer may use: settings, the error tree, time, request context, data dir and secrets."""
