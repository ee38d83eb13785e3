"""A real OpenID provider (npm oidc-provider, run by Node 22) for the single sign-on tests."""
