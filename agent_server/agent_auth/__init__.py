"""Agents sign in (docs/oauth.md): ``POST /agent/auth`` issues API keys to anonymous agents and to
people an organisation's identity provider asserts."""
