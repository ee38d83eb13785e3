"""Single sign-on per tenant: OIDC and SAML 2.0 connections, verified domains, just-in-time users."""
