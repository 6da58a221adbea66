// The to-do list: every outstanding deadline, due soonest first (the overdue ones
// lead), with its kind, age, due time and a countdown; it reads the list again on
// its own every few seconds while its tab is visible (poll.js).

import { deadlines } from './api.js';
import { duration, fill, h, rentalHref, time } from './dom.js';
import { poll } from './poll.js';

// REFRESH_MS keeps 20 visible tabs at about 3.3 requests a second, under GET
// /deadlines's 5 a second (docs/decisions/0025-floods-are-refused-at-the-edge.md).
export const REFRESH_MS = 6000;

const kinds = {
  payment: 'payment due',
  stuck: 'process due',
  return: 'return due',
  refund: 'refund owed',
};

export function todoPage(main, _arg, { describe }) {
  const status = h('p', { class: 'muted', id: 'todo-status' }, 'Reading the to-do list…');
  const body = h('tbody', { id: 'todo-rows' });
  const table = h('div', { class: 'table-wrap' }, h('table', { id: 'todo' },
    h('caption', { class: 'muted' }, 'Outstanding deadlines, overdue first'),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Kind'), h('th', { scope: 'col' }, 'Rental'),
      h('th', { scope: 'col', class: 'num' }, 'Age'), h('th', { scope: 'col', class: 'hide-narrow' }, 'Due at'),
      h('th', { scope: 'col' }, 'Countdown'))),
    body));
  fill(main, h('h2', {}, 'To-do'), status, table);

  let rows = [];
  let skew = 0; // server time minus this browser's
  let stopped = false;

  const tick = () => {
    const now = Date.now() + skew;
    for (const tr of body.children) {
      const due = Date.parse(tr.dataset.due);
      const cell = tr.querySelector('td.due');
      const left = (due - now) / 1000;
      const overdue = left <= 0;
      tr.classList.toggle('overdue', overdue);
      cell.textContent = overdue ? 'overdue by ' + duration(-left) : 'in ' + duration(left);
      const age = tr.querySelector('td.age');
      age.textContent = duration(Number(tr.dataset.age) + (now - Number(tr.dataset.read)) / 1000);
    }
  };

  const render = () => {
    // A refresh keeps the keyboard where it was: on the same rental's link.
    const focused = body.contains(document.activeElement) ? document.activeElement.closest('tr') : null;
    const keep = focused ? [focused.dataset.kind, focused.dataset.rental] : null;
    fill(body, rows.map((r) => h('tr', { 'data-kind': r.kind, 'data-rental': r.rentalId, 'data-due': r.dueAt, 'data-age': r.ageSeconds, 'data-read': r.read },
      h('td', {}, h('span', { class: 'badge ' + (kinds[r.kind] ? r.kind : '') }, kinds[r.kind] || r.kind)),
      h('td', {}, h('a', { href: rentalHref(r.rentalId), class: 'mono' }, r.rentalId)),
      h('td', { class: 'num age' }, duration(r.ageSeconds)),
      h('td', { class: 'hide-narrow' }, time(r.dueAt)),
      h('td', { class: 'due' }))));
    if (keep) {
      const again = [...body.children].find((tr) => tr.dataset.kind === keep[0] && tr.dataset.rental === keep[1]);
      if (again) again.querySelector('a').focus();
    }
    tick();
  };

  const load = async () => {
    try {
      const list = await deadlines({ limit: 200 });
      if (stopped) return;
      const read = Date.now();
      skew = Date.parse(list.now) - read;
      rows = list.deadlines.map((r) => ({ ...r, read: read + skew }));
      render();
      status.textContent = list.count === 0 ? 'Nothing outstanding.'
        : `${list.count} outstanding${list.count >= list.limit ? ' (the first ' + list.limit + ')' : ''}; read ${new Date(read).toLocaleTimeString()}.`;
    } catch (e) {
      if (!stopped) status.textContent = 'The to-do list could not be read: ' + describe(e);
    }
  };

  const stopPolling = poll(load, REFRESH_MS);
  const clock = setInterval(tick, 1000);
  return () => { stopped = true; stopPolling(); clearInterval(clock); };
}
