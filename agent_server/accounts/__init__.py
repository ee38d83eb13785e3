"""Self-serve accounts: registration, e-mail links, password policy, sessions, passkeys, single sign-on."""
