"""The OAuth 2.1 authorization server (docs/oauth.md): authlib's server side on our tables."""
