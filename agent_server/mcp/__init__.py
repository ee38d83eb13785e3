"""The MCP server: the SDK's server fed from the registry, its fast path, sessions and events."""
