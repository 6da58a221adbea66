// The to-do list: every outstanding deadline, due soonest first (the overdue ones
// lead), with its kind, age, due time and a countdown, a page at a time (PAGE rows,
// or the n of #/todo/<n>); it reads the page on view again on its own every few
// seconds while its tab is visible (poll.js). The next page starts after the last
// row of the one before (GET /deadlines's nextCursor), so rows that settle meanwhile
// never push one off a page unseen.

import { deadlines } from './api.js';
import { owedWords } from './byhand.js';
import { duration, fill, h, rentalHref, time } from './dom.js';
import { poll } from './poll.js';

// REFRESH_MS keeps 20 visible tabs at about 3.3 requests a second, under GET
// /deadlines's 5 a second (docs/decisions/0025-floods-are-refused-at-the-edge.md).
export const REFRESH_MS = 6000;

// PAGE is how many rows a page shows unless the address says (#/todo/<n>, 1 to
// MAX_PAGE).
const PAGE = 200;
const MAX_PAGE = 1000;

// pageSize reads the rows a page shows from the page's argument.
function pageSize(arg) {
  const n = /^\d{1,4}$/.test(arg) ? Number(arg) : PAGE;
  return n >= 1 && n <= MAX_PAGE ? n : PAGE;
}

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

export function todoPage(main, arg, { describe }) {
  const limit = pageSize(arg);
  const status = h('div', { class: 'muted', id: 'todo-status', tabindex: '-1' }, 'Reading the to-do list…');
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
  const pager = h('nav', { class: 'row', id: 'todo-pager', 'aria-label': 'Pages of the to-do list', hidden: true });
  fill(main, h('h2', {}, 'To-do'), status, none, table, pager, note, legend());

  let rows = [];
  let skew = 0; // server time minus this browser's
  let stopped = false;
  // cursors holds where each page up to the one on view starts: '' for the first,
  // then the nextCursor of the page before; next is the page on view's.
  let cursors = [''];
  let next = '';
  // asked numbers the reads, so that only the latest one's answer is shown.
  let asked = 0;

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

  // go shows the page that starts at cursors' last, moving the keyboard to its
  // first row.
  const go = async (to) => {
    cursors = to;
    next = '';
    await load();
    const first = body.querySelector('a');
    (first || status).focus();
  };

  const renderPager = () => {
    const page = cursors.length;
    fill(pager,
      page > 1 ? h('button', { type: 'button', class: 'secondary', id: 'todo-first', onclick: () => go(['']) }, 'First page') : null,
      page > 2 ? h('button', { type: 'button', class: 'secondary', id: 'todo-previous', onclick: () => go(cursors.slice(0, -1)) }, 'Previous page') : null,
      next ? h('button', { type: 'button', class: 'secondary', id: 'todo-next', onclick: () => go([...cursors, next]) }, `Next ${limit}`) : null);
    pager.hidden = page === 1 && !next;
  };

  // summary says what the page on view holds.
  const summary = (count) => {
    const page = cursors.length;
    if (page === 1) return count === 0 ? 'Nothing outstanding' : `${count} outstanding${next ? ' (the first ' + count + '; more follow)' : ''}`;
    return count === 0 ? `Page ${page}: nothing more outstanding` : `Page ${page}: ${count} more outstanding${next ? '; more follow' : ''}`;
  };

  const load = async () => {
    const mine = ++asked;
    try {
      const list = await deadlines({ limit, cursor: cursors[cursors.length - 1] });
      if (stopped || mine !== asked) return;
      const read = Date.now();
      skew = Date.parse(list.now) - read;
      next = list.nextCursor || '';
      rows = list.deadlines.map((r) => ({ ...r, read: read + skew }));
      render();
      renderPager();
      table.hidden = list.count === 0;
      const rentals = new Set(rows.map((r) => r.rentalId));
      fill(note, rentals.size < rows.length ? twice : null);
      fill(none, list.count === 0 && cursors.length === 1 ? empty() : null);
      fill(status, summary(list.count), '; read at ', time(new Date(read + skew)), '.');
    } catch (e) {
      if (stopped || mine !== asked) return;
      if (e.status === 400 && cursors.length > 1) { // a page that no longer goes on: the first
        cursors = [''];
        next = '';
        return load();
      }
      fill(status, describe(e, 'The to-do list could not be read; the console tries again in a few seconds.'));
    }
  };

  const stopPolling = poll(load, REFRESH_MS);
  const clock = setInterval(tick, 1000);
  return () => { stopped = true; stopPolling(); clearInterval(clock); };
}
