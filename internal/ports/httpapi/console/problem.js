// What the operator reads when something was refused or failed: the problem's
// title and detail (RFC 9457, as the API answers every refusal), each wrong field
// by name, and the request id to quote; styled as an error.

import { ApiError } from './api.js';
import { h } from './dom.js';

// sentence starts text with a capital and ends it with a full stop.
function sentence(text) {
  const s = String(text).trim();
  if (!s) return '';
  return s[0].toUpperCase() + s.slice(1) + (/[.!?]$/.test(s) ? '' : '.');
}

// words is what went wrong, without the heading: for an invalid request, each
// wrong field and why; else the problem's detail.
function words(err) {
  if (!(err instanceof ApiError)) {
    if (err instanceof TypeError) return ['The API could not be reached: check the network and try again.'];
    return [sentence(err && err.message ? err.message : err)];
  }
  if (err.status === 403) return ['This token does not carry the operator scope, so the operator routes refuse it.'];
  const p = err.problem || {};
  if (Array.isArray(p.invalidParams) && p.invalidParams.length) {
    return ['These are not valid:', h('ul', { class: 'invalid' }, p.invalidParams.map((x) =>
      h('li', {}, h('code', {}, String(x.name)), ' ', String(x.reason))))];
  }
  if (p.detail) return [sentence(p.detail)];
  return [];
}

// title is the problem's heading: its title, or the HTTP status.
function title(err) {
  if (!(err instanceof ApiError)) return 'Something went wrong';
  if (err.status === 403) return 'Not an operator';
  if (err.problem && err.problem.title) return err.problem.title;
  return `HTTP ${err.status}`;
}

// describe returns the element an error is shown as: lead (what could not be
// done, optional) then the problem's title and what went wrong.
export function describe(err, lead) {
  const reqId = err instanceof ApiError && err.problem && err.problem.requestId;
  return h('div', { class: 'problem', role: 'alert' },
    lead ? h('p', { class: 'lead' }, lead) : null,
    h('p', {}, h('strong', { class: 'problem-title' }, title(err)), ' ', words(err).filter((w) => typeof w === 'string')),
    words(err).filter((w) => typeof w !== 'string'),
    reqId ? h('p', { class: 'request-id' }, 'Request ', h('code', {}, String(reqId)), ' (quote it when reporting this).') : null);
}
