"""The internal JSON-RPC bridge for the operator's own services (docs/internal-rpc.md)."""
