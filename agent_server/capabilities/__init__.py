"""The capability registry, the context and services a capability receives, and its projections."""
