// The operator API, same origin, with the bearer token held in this module's
// memory only: never in storage, a cookie or a URL.

let token = null;
let onUnauthenticated = () => {};

export function setToken(t) { token = t; }
export function signedIn() { return token !== null; }
export function whenUnauthenticated(fn) { onUnauthenticated = fn; }

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
  const res = await fetch(path, init);
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

// deadlines reads the to-do list: GET /deadlines, every outstanding deadline
// (kind, rentalId, dueAt, ageSeconds), due soonest first. params: kind, overdue,
// limit.
export function deadlines(params) { return call('GET', '/deadlines' + query(params)); }

export function rental(id) { return call('GET', '/rentals/' + seg(id)); }
export function stuckRentals() { return call('GET', '/processes/stuck'); }
export function refundsOwed() { return call('GET', '/refunds/owed'); }
export function cancelPayment(rentalId) { return call('POST', '/rentals/' + seg(rentalId) + '/cancel-payment'); }
export function registerBike(bikeId) { return call('PUT', '/bikes/' + seg(bikeId)); }
export function returnBike(bikeId, rentalId) {
  return call('POST', '/bikes/' + seg(bikeId) + '/return', rentalId ? { rentalId } : undefined);
}
