// Sign-in. Locally, the runner's own issuer mints a token at POST /local/tokens.
// On AWS, the stack's Cognito user pool through its hosted UI, or JwtIssuer's
// provider through its OpenID discovery: the authorization code grant with PKCE,
// for a public client, in a pop-up window, so that the code verifier and the token
// stay in this page's memory; the pop-up hands the code back by postMessage to
// this origin only, after taking it out of its own address bar.

import { ApiError, call, setToken } from './api.js';

const MESSAGE = 'bikerental-console-sign-in';

let config = null;

export async function loadConfig() {
  config = await call('GET', '/console/config');
  return config;
}

// subjectOf reads who a token names, for display only (the API verifies it).
export function subjectOf(jwt) {
  try {
    const part = jwt.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const claims = JSON.parse(atob(part.padEnd(part.length + ((4 - (part.length % 4)) % 4), '=')));
    return String(claims.email || claims.username || claims['cognito:username'] || claims.sub || '');
  } catch {
    return '';
  }
}

// signInLocal asks the local issuer for a token for sub, with the operator scope
// when operator is true.
export async function signInLocal(sub, operator) {
  const res = await call('POST', '/local/tokens', { sub, operator });
  return res.token;
}

function base64url(bytes) {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function randomString() { return base64url(crypto.getRandomValues(new Uint8Array(32))); }

async function endpoints() {
  if (config.authorizationEndpoint && config.tokenEndpoint) return config;
  const res = await fetch(config.issuer.replace(/\/$/, '') + '/.well-known/openid-configuration',
    { credentials: 'omit', referrerPolicy: 'no-referrer' });
  if (!res.ok) throw new Error('the identity provider\'s discovery document could not be read');
  const d = await res.json();
  return { authorizationEndpoint: d.authorization_endpoint, tokenEndpoint: d.token_endpoint, logoutEndpoint: d.end_session_endpoint };
}

function redirectURI() { return location.origin + '/console'; }

// signInOIDC runs the authorization code grant with PKCE in a pop-up and resolves
// to the access token.
export async function signInOIDC() {
  const ep = await endpoints();
  const verifier = randomString();
  const state = randomString();
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  const url = new URL(ep.authorizationEndpoint);
  url.search = new URLSearchParams({
    response_type: 'code', client_id: config.clientId, redirect_uri: redirectURI(), scope: config.scope,
    state, code_challenge: base64url(digest), code_challenge_method: 'S256',
  }).toString();
  const popup = window.open(url.toString(), 'bikerental-sign-in', 'popup,width=480,height=640');
  if (!popup) throw new Error('the sign-in window was blocked: allow pop-ups for this page');
  const code = await new Promise((resolve, reject) => {
    const listener = (e) => {
      if (e.origin !== location.origin || e.source !== popup || !e.data || e.data.type !== MESSAGE) return;
      window.removeEventListener('message', listener);
      clearInterval(watch);
      if (e.data.state !== state) reject(new Error('the sign-in answer does not belong to this sign-in'));
      else if (e.data.error) reject(new Error('sign-in failed: ' + e.data.error));
      else resolve(e.data.code);
    };
    const watch = setInterval(() => {
      if (popup.closed) { window.removeEventListener('message', listener); clearInterval(watch); reject(new Error('the sign-in window was closed')); }
    }, 500);
    window.addEventListener('message', listener);
  });
  const res = await fetch(ep.tokenEndpoint, {
    method: 'POST', credentials: 'omit', referrerPolicy: 'no-referrer',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', client_id: config.clientId, code, redirect_uri: redirectURI(), code_verifier: verifier }),
  });
  const body = await res.json().catch(() => ({}));
  if (!res.ok || !body.access_token) throw new Error('the identity provider refused the sign-in' + (body.error ? ': ' + body.error : ''));
  return body.access_token;
}

// handleCallback is what the console does when it loads as the sign-in pop-up's
// return (?code=…&state=… or ?error=…): it removes the code from the address bar,
// hands it to the page that opened the pop-up, on this origin only, and closes.
// It returns false when the page did not load as a callback.
export function handleCallback() {
  const q = new URLSearchParams(location.search);
  if (!q.has('code') && !q.has('error')) return false;
  const message = { type: MESSAGE, code: q.get('code'), state: q.get('state'), error: q.get('error') };
  history.replaceState(null, '', location.pathname);
  if (window.opener && window.opener !== window) {
    window.opener.postMessage(message, location.origin);
    window.close();
  }
  return true;
}

// signOut forgets the token; with an identity provider it ends its session too.
export async function signOut() {
  setToken(null);
  if (!config || config.signIn !== 'oidc') return;
  let ep;
  try { ep = await endpoints(); } catch { return; }
  if (!ep.logoutEndpoint) return;
  const url = new URL(ep.logoutEndpoint);
  const cognito = Boolean(config.logoutEndpoint);
  url.search = new URLSearchParams(cognito
    ? { client_id: config.clientId, logout_uri: redirectURI() }
    : { client_id: config.clientId, post_logout_redirect_uri: redirectURI() }).toString();
  location.assign(url.toString());
}

// checkOperator asks the API whether the token opens the operator routes: the
// to-do list answers 403 to a token without the operator scope.
export async function checkOperator() {
  try {
    await call('GET', '/deadlines?limit=1');
    return true;
  } catch (e) {
    if (e instanceof ApiError && e.status === 403) return false;
    throw e;
  }
}
