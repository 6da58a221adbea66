// A rental: its status, the refund state, and the timeline across its bike, payment
// and process streams, with times and what caused each event; and the operator
// commands that apply to it.

import { cancelPayment, rental, returnBike } from './api.js';
import { byHandForm, debtsOf, money, owedWords } from './byhand.js';
import { confirm, duration, fill, h, rentalHref, time } from './dom.js';
import { nextDelay } from './poll.js';
import { BIKE_OUT, ID_MAX_LENGTH, ID_PATTERN, MOVING, PAYMENT_OPEN } from './rules.js';

// While a rental moves on on its own (MOVING), its page reads it again.
const REFRESH_MS = 3000;

// statusWords say what a rental's status means to an operator.
const statusWords = {
  'requested': 'the bike is held; the payment is being prepared',
  'awaiting-payment': 'waiting for the renter to pay',
  'approved': 'paid: the renter has the bike',
  'overdue': 'the renter has the bike, and it was not back by its due time',
  'returned': 'the bike came back',
  'rejecting': 'the payment was refused; the bike is being released',
  'rejected': 'the payment was refused; the bike is free again',
  'cancelling': 'the payment was called off; the bike is being released',
  'cancelled': 'the payment was called off; the bike is free again',
};

// refundWords say where money taken after a payment was given up on stands.
const refundWords = {
  'requested': 'the provider accepted a refund and is making it',
  'owed': 'the provider cannot refund: pay it back by hand, then record it here',
  'refunded': 'the provider refunded it',
  'refunded-by-hand': 'an operator recorded it paid back by hand (the timeline says who, and under which reference)',
  'refunded-twice': 'paid back twice: by hand, and then by the provider too; ask the renter for one of them back',
};

// streamKind names the stream an event is in: bike, payment or process.
function streamKind(stream) {
  if (stream.startsWith('bike-')) return 'bike';
  if (stream.startsWith('payment-')) return 'payment';
  if (stream.startsWith('rentalpayment-')) return 'process';
  return 'other';
}

// cause says what caused an event, from its causation id: another event of the
// timeline, an API request, the sweep, a provider's webhook, what the provider
// answered when asked about a payment, or a command line.
function cause(entry, byId) {
  const c = entry.causationId;
  if (!c) return 'cause not recorded';
  const e = byId.get(c);
  if (e) return `caused by ${e.type} (${streamKind(e.stream)} stream, version ${e.version})`;
  const [kind, ...rest] = c.split(':');
  const what = rest.join(':');
  switch (kind) {
    case 'request': return 'caused by API request ' + what;
    case 'sweep': return 'caused by the sweep of ' + what;
    case 'deadline': return 'caused by the deadline of payment ' + what;
    case 'provider-event': return providerEventCause(what);
    case 'rentalctl': return 'caused by rentalctl ' + what;
    case 'provider-payment': return "caused by the provider's answer about payment " + what;
    default: return 'caused by ' + c;
  }
}

// providerEventCause reads what follows "provider-event:" in a causation id: the
// provider and its event id ("stripe:evt_1"), or, for an id too long to be kept
// whole, the provider and the id's SHA-256 ("stripe:sha256:<hex>").
function providerEventCause(what) {
  const [provider, ...rest] = what.split(':');
  const id = rest.join(':');
  if (!provider || !id) return "caused by the provider's event " + what;
  if (id.startsWith('sha256:')) return `caused by the provider's event whose id has SHA-256 ${id.slice('sha256:'.length)} (${provider})`;
  return `caused by the provider's event ${id} (${provider})`;
}

function details(data) {
  if (!data || typeof data !== 'object') return [];
  return Object.keys(data).filter((k) => !['rentalId', 'bikeId', 'reference'].includes(k)).sort()
    .map((k) => `${k}=${typeof data[k] === 'string' ? data[k] : JSON.stringify(data[k])}`);
}

function lookupForm(value) {
  const input = h('input', { type: 'text', id: 'rental-id', name: 'rentalId', value, autocomplete: 'off', spellcheck: 'false', required: true,
    pattern: ID_PATTERN, maxlength: ID_MAX_LENGTH, title: 'A rental id: letters, digits, _ and -' });
  const form = h('form', { class: 'card', id: 'rental-lookup' },
    h('label', { for: 'rental-id' }, 'Rental id'),
    h('div', { class: 'row' }, input, h('button', { type: 'submit' }, 'Show')));
  form.addEventListener('submit', (e) => { e.preventDefault(); location.hash = rentalHref(input.value.trim()); });
  return form;
}

// hint is what the bare page says: where rental ids come from.
function hint() {
  return h('p', { class: 'muted', id: 'rental-hint' }, 'Type a rental\'s id to read its status and its timeline, and to act on it. ',
    'Every rental the ', h('a', { href: '#/todo' }, 'to-do list'), ' or ', h('a', { href: '#/backlog' }, 'Refunds & stuck'),
    ' shows links here; a renter finds theirs in the answer to their request.');
}

// actionsFor returns what an operator can do to rental v, only what can succeed
// (rules.js): record the return while the renter has the bike, cancel the payment
// while it is open, record a refund made by hand while one is owed for hands; and
// otherwise a line saying why there is nothing to do. result shows an action's
// answer (or form); show reads the rental again after one.
function actionsFor(v, result, show, { describe, subject }) {
  const actions = [];
  if (PAYMENT_OPEN.includes(v.status)) {
    const cancel = h('button', { type: 'button', id: 'cancel-payment', class: 'danger' }, 'Cancel payment…');
    cancel.addEventListener('click', async () => {
      if (!(await confirm(`Cancel the payment of rental ${v.rentalId}? The bike is then freed; a payment the provider has confirmed meanwhile declines it.`, 'Cancel payment', true))) return;
      try {
        const r = await cancelPayment(v.rentalId);
        fill(result, 'Cancel payment: ', h('span', { class: 'outcome ' + r.outcome, id: 'cancel-outcome' }, r.outcome));
        show();
      } catch (e) { fill(result, describe(e, 'The payment was not cancelled.')); }
    });
    actions.push(cancel);
  }
  if (BIKE_OUT.includes(v.status)) {
    const ret = h('button', { type: 'button', id: 'record-return' }, 'Record return…');
    ret.addEventListener('click', async () => {
      if (!(await confirm(`Record that bike ${v.bikeId} of rental ${v.rentalId} came back?`, 'Record return'))) return;
      try {
        const b = await returnBike(v.bikeId, v.rentalId);
        fill(result, 'Return recorded: bike ', h('code', {}, b.bikeId), ' is ', b.status, '.');
        show();
      } catch (e) { fill(result, describe(e, 'The return was not recorded.')); }
    });
    actions.push(ret);
  }
  for (const debt of debtsOf(v)) { // each refund owed, on its own form
    const byHand = debt.own ? h('button', { type: 'button', id: 'record-refund-by-hand' }, 'Record refund made by hand…')
      : h('button', { type: 'button', class: 'record-unexpected-refund-by-hand', 'data-payment-id': debt.paymentId },
        'Record refund made by hand of ', h('code', {}, debt.paymentId), '…');
    byHand.addEventListener('click', () => {
      fill(result, byHandForm(v, { debt, describe, subject, done: () => show() }));
      document.getElementById('byhand-amount').focus();
    });
    actions.push(byHand);
  }
  if (actions.length === 0) {
    actions.push(h('p', { class: 'muted', id: 'no-action' }, MOVING.includes(v.status)
      ? 'Nothing to do: the rental moves on on its own, and this page follows it.'
      : 'Nothing to do: the rental has ended.'));
  }
  return actions;
}

export function rentalPage(main, id, { notice, describe, subject }) {
  fill(main, h('h2', {}, 'Rental'), lookupForm(id));
  if (!id) {
    main.append(hint());
    return () => {};
  }
  const out = h('div', { id: 'rental' }, h('p', { class: 'muted' }, 'Reading the rental…'));
  main.append(out);
  let stopped = false;
  let again = null;
  const result = h('div', { id: 'action-result', role: 'status' });

  const show = async () => {
    if (document.querySelector('dialog[open]')) { // never redraw under a question being asked
      clearTimeout(again);
      again = setTimeout(show, nextDelay(REFRESH_MS));
      return;
    }
    let v;
    try {
      v = await rental(id);
    } catch (e) {
      if (!stopped && e.status === 429) { clearTimeout(again); again = setTimeout(show, nextDelay(REFRESH_MS)); return; }
      if (!stopped) fill(out, h('div', { id: 'rental-error' }, describe(e, ['Rental ', h('code', {}, id), ' could not be read.'])));
      return;
    }
    if (stopped) return;
    clearTimeout(again);
    if (MOVING.includes(v.status)) again = setTimeout(show, nextDelay(REFRESH_MS));
    const focused = out.contains(document.activeElement) ? document.activeElement.id : '';
    const byId = new Map(v.history.filter((e) => e.eventId).map((e) => [e.eventId, e]));
    const pay = v.payment || {};
    const facts = h('dl', { class: 'facts' },
      h('dt', {}, 'Status'), h('dd', {}, h('span', { id: 'rental-status', class: 'status' }, v.status),
        statusWords[v.status] ? h('span', { class: 'muted' }, ': ' + statusWords[v.status]) : null),
      h('dt', {}, 'Rental'), h('dd', { class: 'mono' }, v.rentalId),
      h('dt', {}, 'Bike'), h('dd', { class: 'mono' }, v.bikeId),
      h('dt', {}, 'Renter'), h('dd', { class: 'mono' }, v.renter),
      h('dt', {}, 'Payment'), h('dd', { class: 'mono' }, v.paymentReference),
      h('dt', {}, 'Payment status'), h('dd', { id: 'payment-status' }, pay.status || 'none yet'),
      pay.currency ? [h('dt', {}, 'Amount'), h('dd', { id: 'payment-amount' }, money(pay.amount, pay.currency))] : null,
      // What the provider took after the payment was given up on: what goes back.
      pay.taken ? [h('dt', {}, 'Taken'), h('dd', { id: 'payment-taken' }, money(pay.taken.amount, pay.taken.currency),
        pay.taken.amount !== pay.amount || pay.taken.currency !== pay.currency ? h('span', { class: 'muted' }, ': not what the payment was for; this is what goes back') : null)] : null,
      h('dt', {}, 'Refund'), h('dd', {}, h('span', { id: 'refund-state' }, pay.refund || 'none'),
        refundWords[pay.refund] ? h('span', { class: 'muted' }, ': ' + refundWords[pay.refund]) : null),
      pay.unexpectedRefunds ? [h('dt', {}, 'Taken on other payments'), h('dd', {}, h('ul', { id: 'unexpected-refunds' },
        pay.unexpectedRefunds.map((u) => h('li', { 'data-payment-id': u.paymentId }, h('code', {}, u.paymentId), ': ',
          owedWords(u.amount, u.currency), ', ', h('span', { class: 'unexpected-refund-state' }, u.refund),
          refundWords[u.refund] ? h('span', { class: 'muted' }, ': ' + refundWords[u.refund]) : null))))] : null,
      v.overdue ? [h('dt', {}, 'Due back'), h('dd', { id: 'due-back' }, time(v.overdue.dueAt),
        v.overdue.lateSeconds !== undefined ? ` (back ${duration(v.overdue.lateSeconds)} late)` : ' (overdue)')] : null);
    const timeline = h('ol', { class: 'timeline', id: 'timeline' }, v.history.map((e) => {
      const kind = streamKind(e.stream);
      return h('li', { class: 'stream-' + kind, 'data-type': e.type },
        h('div', {}, h('span', { class: 'event-type' }, e.type), ' ', h('span', { class: 'badge' }, kind)),
        h('div', { class: 'event-meta' }, time(e.at), ' · ', h('span', { class: 'mono' }, `${e.stream} v${e.version}`), ' · ',
          h('span', { class: 'cause' }, cause(e, byId))),
        details(e.data).length ? h('div', { class: 'event-data mono' }, details(e.data).join('  ')) : null);
    }));
    const actions = actionsFor(v, result, show, { describe, subject });
    fill(out,
      h('section', { class: 'card' }, facts, h('div', { class: 'row', id: 'rental-actions' }, actions), result),
      h('h3', {}, `Timeline (${v.history.length} events)`), timeline);
    if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
    notice('');
  };
  show();
  return () => { stopped = true; clearTimeout(again); };
}
