// A real OpenID provider on loopback for the single sign-on tests (oidc-provider, run by Node 22).
//
// Everything comes from the environment, set by tests/accounts/oidc_provider/server.py:
//   OIDC_PORT     port to listen on (127.0.0.1 only)
//   OIDC_ISSUER   the issuer identifier, e.g. http://127.0.0.1:<port>
//   OIDC_CLIENTS  JSON list of client registrations (client_id, client_secret, redirect_uris, ...)
//   OIDC_JWKS     JSON {"keys": [...]} with private keys: the ID-token signing keys
//   OIDC_USERS    JSON {accountId: {email, email_verified, ...}}: who can sign in
//   OIDC_AUTH_METHODS  optional comma list of client authentication methods the provider offers
//   OIDC_DISCOVERY     optional JSON object whose fields replace those of the discovery document
//                      (a provider that names endpoints elsewhere, e.g. on an internal address)
// Sign-in uses the provider's development interactions: a login form (any password) and a consent
// form, both plain HTML that a test posts with an HTTP client. It prints "ready" once listening.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';

import Provider from 'oidc-provider';

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const users = JSON.parse(env('OIDC_USERS'));
const authMethods = process.env.OIDC_AUTH_METHODS?.split(',');

const provider = new Provider(env('OIDC_ISSUER'), {
  clients: JSON.parse(env('OIDC_CLIENTS')),
  jwks: JSON.parse(env('OIDC_JWKS')),
  cookies: { keys: [randomBytes(32).toString('hex')] },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  // Scope claims in the ID token itself (as the common hosted providers do), not only at userinfo.
  conformIdTokenClaims: false,
  ...(authMethods ? { clientAuthMethods: authMethods } : {}),
  features: { devInteractions: { enabled: true } },
  async findAccount(ctx, accountId) {
    const claims = users[accountId];
    if (!claims) return undefined;
    return { accountId, claims: async () => ({ sub: accountId, ...claims }) };
  },
});

const discovery = process.env.OIDC_DISCOVERY && JSON.parse(process.env.OIDC_DISCOVERY);
if (discovery) {
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.path === '/.well-known/openid-configuration' && ctx.body) Object.assign(ctx.body, discovery);
  });
}

const server = createServer(provider.callback());
server.listen(Number(env('OIDC_PORT')), '127.0.0.1', () => console.log('ready'));
