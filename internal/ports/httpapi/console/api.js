// The operator API, same origin, with the bearer token held in this module's
// memory only: never in storage, a cookie or a URL.

let token = null;
let onUnauthenticated = () => {};
let onThrottled = () => {};
let onRecovered = () => {};
// heldUntil is when the API may be asked again after a 429 (Date.now() ms), and
// backoff how long the last 429 without a Retry-After held it.
let heldUntil = 0;
let backoff = 0;
let throttled = false;

export function setToken(t) { token = t; }
export function signedIn() { return token !== null; }
export function whenUnauthenticated(fn) { onUnauthenticated = fn; }
// whenThrottled(fn) calls fn(seconds) when the API answers 429; whenRecovered(fn)
// calls fn() on the first answer after that which is not a 429.
export function whenThrottled(fn) { onThrottled = fn; }
export function whenRecovered(fn) { onRecovered = fn; }

// heldFor is how many ms remain before the console may ask the API again.
export function heldFor() { return Math.max(0, heldUntil - Date.now()); }

// retryAfterMs reads a Retry-After header (seconds, or an HTTP date), or null.
function retryAfterMs(value) {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

// hold stops every request for what the 429 asked (Retry-After), or, without one
// (API Gateway sends none), for a backoff doubling from 2 s to a minute; a little
// jitter keeps many tabs from asking again all at once.
function hold(res) {
  let ms = retryAfterMs(res.headers.get('Retry-After'));
  if (ms === null) {
    backoff = Math.min(60000, backoff ? backoff * 2 : 2000);
    ms = backoff;
  }
  ms += Math.round(Math.random() * Math.min(ms, 2000) * 0.25);
  heldUntil = Math.max(heldUntil, Date.now() + ms);
  throttled = true;
  onThrottled(Math.ceil(heldFor() / 1000));
}

// ApiError is a refused call: its status and the problem details (RFC 9457) the
// API answered with, when it did.
export class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || null;
  }
}

export async function call(method, path, body) {
  const headers = { Accept: 'application/json, application/problem+json' };
  if (token !== null) headers.Authorization = 'Bearer ' + token;
  const init = { method, headers, credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer', redirect: 'error' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const wait = heldFor();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  const res = await fetch(path, init);
  if (res.status === 429) hold(res);
  else {
    backoff = 0;
    if (throttled) { throttled = false; onRecovered(); }
  }
  let data = null;
  try { data = await res.json(); } catch { data = null; }
  if (!res.ok) {
    const err = new ApiError(res.status, data);
    if (res.status === 401 && token !== null) onUnauthenticated(err);
    throw err;
  }
  return data;
}

const seg = encodeURIComponent;

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return s ? '?' + s : '';
}

// deadlines reads a page of the to-do list: GET /deadlines, the outstanding
// deadlines (kind, rentalId, dueAt, ageSeconds), due soonest first, and the
// nextCursor of the page after. params: kind, overdue, limit, cursor.
export function deadlines(params) { return call('GET', '/deadlines' + query(params)); }

export function rental(id) { return call('GET', '/rentals/' + seg(id)); }
export function stuckRentals() { return call('GET', '/processes/stuck'); }
export function refundsOwed() { return call('GET', '/refunds/owed'); }
export function cancelPayment(rentalId) { return call('POST', '/rentals/' + seg(rentalId) + '/cancel-payment'); }
// refundMadeByHand records that a refund owed of a rental was paid back by hand:
// amount in minor units (the amount owed), reference the operator's own. more may
// name the refund by its provider payment (paymentId; without it, the rental's own
// payment's) and the currency paid back (currency).
export function refundMadeByHand(rentalId, amount, reference, more = {}) {
  return call('POST', '/rentals/' + seg(rentalId) + '/refund-made-by-hand', { amount, reference, ...more });
}
export function registerBike(bikeId) { return call('PUT', '/bikes/' + seg(bikeId)); }
export function returnBike(bikeId, rentalId) {
  return call('POST', '/bikes/' + seg(bikeId) + '/return', rentalId ? { rentalId } : undefined);
}
