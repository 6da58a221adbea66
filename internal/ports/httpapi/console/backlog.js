// Refunds owed and stuck rentals, from operator routes that read the to-do table's
// index (GET /refunds/owed, GET /processes/stuck): the browser never scans. Each
// refund owed offers to record it made by hand (byhand.js); a rental that owes two
// (its own payment's, and money taken on another provider payment) has a row, and
// a form, for each.

import { refundsOwed, rental, stuckRentals } from './api.js';
import { byHandForm, debtsOf, owedWords } from './byhand.js';
import { duration, fill, h, rentalHref, time } from './dom.js';
import { poll } from './poll.js';

// The page reads both lists again on its own while its tab is visible: 20 visible
// tabs ask each route 2 times a second, under its 5 (docs/decisions/0025-floods-are-refused-at-the-edge.md).
const REFRESH_MS = 10000;

// causeWords say why a refund is owed (GET /refunds/owed's cause).
const causeWords = {
  'late-success': 'paid after the payment was given up on',
  'other-payment': 'taken on another provider payment',
};

function table(id, heads, rows) {
  return h('div', { class: 'table-wrap' }, h('table', { id },
    h('thead', {}, h('tr', {}, heads.map(([label, cls]) => h('th', { scope: 'col', class: cls }, label)))),
    h('tbody', {}, rows)));
}

function section(id, title, blurb) {
  const body = h('div', { id: id + '-body' }, h('p', { class: 'muted' }, 'Reading…'));
  return { body, node: h('section', { id }, h('h3', {}, title), h('p', { class: 'muted' }, blurb), body) };
}

export function backlogPage(main, _arg, { describe, subject }) {
  const refunds = section('refunds', 'Refunds owed',
    'Money a provider took for a rental that did not get its bike and did not refund: on the rental\'s own payment, or on another provider payment under its reference. Pay each back by hand, then record it; it leaves the list once its refund is recorded.');
  const stuck = section('stuck', 'Stuck rentals',
    'Rentals whose process has not completed in time. The sweep repairs them through the consumers\' own handlers; one that stays here needs a look at its timeline.');
  const byHand = h('div', { id: 'refunds-action' });
  refunds.node.append(byHand);
  fill(main, h('h2', {}, 'Refunds owed and stuck rentals'), refunds.node, stuck.node);
  let stopped = false;
  // recorded holds the refunds this page recorded (rental and provider payment):
  // their rows say so until the list, which the projector keeps, has caught up.
  const recorded = new Set();
  const keyOf = (rentalId, paymentId) => rentalId + '\u0000' + paymentId;
  const link = (id) => h('a', { href: rentalHref(id), class: 'mono' }, id);
  const loadRefunds = async () => {
    try {
      const list = await refundsOwed();
      if (stopped) return;
      fill(refunds.body, list.count === 0 ? h('p', { id: 'refunds-empty' }, 'No refund is owed. A refund owed appears here when a provider takes money for a rental that did not get its bike and does not refund it.')
        : table('refunds-table', [['Rental'], ['Payment', 'hide-narrow'], ['Provider payment'], ['Owed'], ['Why'], ['Owed since', 'hide-narrow'], ['Age', 'num'], ['Action']],
          list.refunds.map((r) => h('tr', { 'data-rental': r.rentalId, 'data-payment-id': r.paymentId || '' },
            h('td', {}, link(r.rentalId)), h('td', { class: 'mono hide-narrow' }, r.paymentReference),
            h('td', { class: 'mono payment-id' }, r.paymentId || '?'), h('td', { class: 'owed' }, r.paymentId ? owedWords(r.amount, r.currency) : '?'),
            h('td', { class: 'why' }, causeWords[r.cause] || r.cause || '?', r.reason ? h('div', { class: 'muted reason' }, r.reason) : null),
            h('td', { class: 'hide-narrow' }, time(r.owedSince)), h('td', { class: 'num' }, duration(r.ageSeconds)),
            h('td', {}, recorded.has(keyOf(r.rentalId, r.paymentId)) ? h('span', { class: 'muted' }, 'Recorded; leaving the list')
              : h('button', { type: 'button', class: 'record-refund-by-hand', onclick: () => openForm(r.rentalId, r.paymentId) }, 'Record refund made by hand…'))))));
    } catch (e) {
      if (!stopped) fill(refunds.body, describe(e, 'The refunds owed could not be read; the page tries again in a few seconds.'));
    }
  };
  // openForm reads the rental, so that the form holds what is owed now on the
  // provider payment paymentId, and shows its form, or why there is nothing to
  // record.
  const openForm = async (id, paymentId) => {
    fill(byHand, h('p', { class: 'muted' }, 'Reading rental ', h('code', {}, id), '…'));
    let v;
    try {
      v = await rental(id);
    } catch (e) {
      if (!stopped) fill(byHand, describe(e, ['Rental ', h('code', {}, id), ' could not be read: nothing was recorded.']));
      return;
    }
    if (stopped) return;
    const debt = debtsOf(v).find((d) => d.paymentId === paymentId);
    if (!debt) {
      fill(byHand, h('p', { class: 'card', id: 'byhand-none' }, 'Rental ', h('code', {}, id), ' owes no refund on provider payment ', h('code', {}, paymentId || '?'),
        ' to record by hand now; the list catches up in a few seconds.'));
      return;
    }
    fill(byHand, byHandForm(v, { debt, describe, subject, done: () => { recorded.add(keyOf(id, paymentId)); loadRefunds(); } }));
    document.getElementById('byhand-amount').focus();
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
