// The to-do list: every outstanding deadline, due soonest first (the overdue ones
// lead), with its kind, age, due time and a countdown; it reads the list again on
// its own every few seconds while its tab is visible (poll.js).

import { deadlines } from './api.js';
import { owedWords } from './byhand.js';
import { duration, fill, h, rentalHref, time } from './dom.js';
import { poll } from './poll.js';

// REFRESH_MS keeps 20 visible tabs at about 3.3 requests a second, under GET
// /deadlines's 5 a second (docs/decisions/0025-floods-are-refused-at-the-edge.md).
export const REFRESH_MS = 6000;

// kinds are the to-do list's kinds in an operator's words: a label, and what the
// row means and what happens when it falls due. A kind the console does not know
// shows by its name.
const kinds = {
  payment: ['Payment due', 'the renter has until then to pay; then the sweep cancels the payment and frees the bike'],
  stuck: ['Process check', 'by then the rental\'s process should have finished; if not, the sweep repairs it'],
  return: ['Bike due back', 'the renter should bring the bike back by then; once overdue, follow the renter up'],
  refund: ['Refund owed', 'money taken for a rental that did not get its bike, on its own payment or on another provider payment (each a row of its own): pay it back by hand, then record it on the rental\'s page or on Refunds & stuck; it then leaves the list'],
};

function legend() {
  return h('details', { class: 'legend', id: 'todo-legend' }, h('summary', {}, 'What the kinds mean'),
    h('dl', {}, Object.entries(kinds).map(([k, [label, meaning]]) => [
      h('dt', {}, h('span', { class: 'badge ' + k }, label)), h('dd', {}, meaning + '.')])));
}

// twice explains a rental listed more than once.
const twice = 'A rental waiting for its payment is listed twice: its payment due and, a little later, the check ' +
  'that its process finished. Both leave the list when the payment settles; the rental\'s page shows its whole story.';

// empty is what the list says when nothing is outstanding, and what to do then.
function empty() {
  return h('p', { class: 'card', id: 'todo-empty' }, 'Nothing outstanding: no payment is awaited, no bike is out and no refund is owed. ',
    'New requests appear here as they are made. To read one rental, open ', h('a', { href: '#/rental' }, 'Rental'),
    '; to register bikes or record a return, open ', h('a', { href: '#/actions' }, 'Actions'), '.');
}

export function todoPage(main, _arg, { describe }) {
  const status = h('div', { class: 'muted', id: 'todo-status' }, 'Reading the to-do list…');
  const body = h('tbody', { id: 'todo-rows' });
  const table = h('div', { class: 'table-wrap' }, h('table', { id: 'todo' },
    h('caption', { class: 'muted' }, 'Outstanding deadlines, overdue first'),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Kind'), h('th', { scope: 'col' }, 'Rental'),
      h('th', { scope: 'col', class: 'num' }, 'Age'), h('th', { scope: 'col', class: 'hide-narrow' }, 'Due at'),
      h('th', { scope: 'col' }, 'Countdown'))),
    body));
  const none = h('div', { id: 'todo-none' });
  const note = h('p', { class: 'muted', id: 'todo-twice' });
  fill(main, h('h2', {}, 'To-do'), status, none, table, note, legend());

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
    const keep = focused ? [focused.dataset.kind, focused.dataset.rental, focused.dataset.paymentId] : null;
    fill(body, rows.map((r) => h('tr', { 'data-kind': r.kind, 'data-rental': r.rentalId, 'data-payment-id': r.refund ? r.refund.paymentId : null,
      'data-due': r.dueAt, 'data-age': r.ageSeconds, 'data-read': r.read },
      h('td', {}, h('span', { class: 'badge ' + (kinds[r.kind] ? r.kind : ''), title: kinds[r.kind] ? kinds[r.kind][1] : null }, kinds[r.kind] ? kinds[r.kind][0] : r.kind)),
      h('td', {}, h('a', { href: rentalHref(r.rentalId), class: 'mono' }, r.rentalId),
        r.refund ? h('div', { class: 'muted owed-on' }, owedWords(r.refund.amount, r.refund.currency), ' on ', h('code', {}, r.refund.paymentId)) : null),
      h('td', { class: 'num age' }, duration(r.ageSeconds)),
      h('td', { class: 'hide-narrow' }, time(r.dueAt)),
      h('td', { class: 'due' }))));
    if (keep) {
      const again = [...body.children].find((tr) => tr.dataset.kind === keep[0] && tr.dataset.rental === keep[1] && tr.dataset.paymentId === keep[2]);
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
      table.hidden = list.count === 0;
      const rentals = new Set(rows.map((r) => r.rentalId));
      fill(note, rentals.size < rows.length ? twice : null);
      fill(none, list.count === 0 ? empty() : null);
      fill(status, list.count === 0 ? 'Nothing outstanding' : `${list.count} outstanding${list.count >= list.limit ? ' (the first ' + list.limit + ')' : ''}`,
        '; read at ', time(new Date(read + skew)), '.');
    } catch (e) {
      if (!stopped) fill(status, describe(e, 'The to-do list could not be read; the console tries again in a few seconds.'));
    }
  };

  const stopPolling = poll(load, REFRESH_MS);
  const clock = setInterval(tick, 1000);
  return () => { stopped = true; stopPolling(); clearInterval(clock); };
}
