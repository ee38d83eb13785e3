"""The public site API's core: chat tokens, modes, the site's model budget, ask streaming,
catalogues, subscriptions and health. ``agent_server.site.build`` wires it; routes live in
``http_facade/routes/site_*.py``; the contract is docs/public-api.md."""
