"""Agentic Commerce Protocol (ACP, version 2026-04-17): agent platforms buy the catalogue through
checkout sessions over REST and MCP (docs/agentic-commerce.md)."""
