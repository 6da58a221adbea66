// Refunds owed and stuck rentals, from operator routes that read the to-do table's
// index (GET /refunds/owed, GET /processes/stuck): the browser never scans.

import { refundsOwed, stuckRentals } from './api.js';
import { duration, fill, h, rentalHref, time } from './dom.js';
import { poll } from './poll.js';

// The page reads both lists again on its own while its tab is visible: 20 visible
// tabs ask each route 2 times a second, under its 5 (docs/decisions/0025-floods-are-refused-at-the-edge.md).
const REFRESH_MS = 10000;

function table(id, heads, rows) {
  return h('div', { class: 'table-wrap' }, h('table', { id },
    h('thead', {}, h('tr', {}, heads.map(([label, cls]) => h('th', { scope: 'col', class: cls }, label)))),
    h('tbody', {}, rows)));
}

function section(id, title, blurb) {
  const body = h('div', { id: id + '-body' }, h('p', { class: 'muted' }, 'Reading…'));
  return { body, node: h('section', { id }, h('h3', {}, title), h('p', { class: 'muted' }, blurb), body) };
}

export function backlogPage(main, _arg, { describe }) {
  const refunds = section('refunds', 'Refunds owed',
    'Money a provider that cannot refund took for a rental that did not get its bike: pay each back by hand; it leaves the list once its refund is recorded.');
  const stuck = section('stuck', 'Stuck rentals',
    'Rentals whose process has not completed in time. The sweep repairs them through the consumers\' own handlers; one that stays here needs a look at its timeline.');
  fill(main, h('h2', {}, 'Refunds owed and stuck rentals'), refunds.node, stuck.node);
  let stopped = false;
  const link = (id) => h('a', { href: rentalHref(id), class: 'mono' }, id);
  const loadRefunds = async () => {
    try {
      const list = await refundsOwed();
      if (stopped) return;
      fill(refunds.body, list.count === 0 ? h('p', { id: 'refunds-empty' }, 'No refund is owed. A refund owed appears here when a provider that cannot refund takes money for a rental that did not get its bike.')
        : table('refunds-table', [['Rental'], ['Payment', 'hide-narrow'], ['Owed since'], ['Age', 'num']],
          list.refunds.map((r) => h('tr', { 'data-rental': r.rentalId },
            h('td', {}, link(r.rentalId)), h('td', { class: 'mono hide-narrow' }, r.paymentReference),
            h('td', {}, time(r.owedSince)), h('td', { class: 'num' }, duration(r.ageSeconds))))));
    } catch (e) {
      if (!stopped) fill(refunds.body, describe(e, 'The refunds owed could not be read; the page tries again in a few seconds.'));
    }
  };
  const loadStuck = async () => {
    try {
      const list = await stuckRentals();
      if (stopped) return;
      fill(stuck.body, list.count === 0 ? h('p', { id: 'stuck-empty' }, 'No rental is stuck: every process finished in time.')
        : table('stuck-table', [['Rental'], ['Requested at', 'hide-narrow'], ['Stuck since'], ['Age', 'num']],
          list.rentals.map((r) => h('tr', { 'data-rental': r.rentalId },
            h('td', {}, link(r.rentalId)), h('td', { class: 'hide-narrow' }, time(r.requestedAt)),
            h('td', {}, time(r.stuckSince)), h('td', { class: 'num' }, duration(r.ageSeconds))))));
    } catch (e) {
      if (!stopped) fill(stuck.body, describe(e, 'The stuck rentals could not be read; the page tries again in a few seconds.'));
    }
  };
  const stopPolling = poll(() => Promise.all([loadRefunds(), loadStuck()]), REFRESH_MS);
  return () => { stopped = true; stopPolling(); };
}
