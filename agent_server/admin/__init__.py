"""The tenant administration surface: audit, connectors, playground traces, CSP reports."""
