// A rental: its status, the refund state, and the timeline across its bike, payment
// and process streams, with times and what caused each event; and the operator
// commands that apply to it.

import { cancelPayment, rental, returnBike } from './api.js';
import { confirm, fill, h, rentalHref, time } from './dom.js';
import { nextDelay } from './poll.js';

// While a rental is on its way somewhere, its page reads it again on its own.
const UNSETTLED = ['requested', 'awaiting-payment', 'cancelling', 'rejecting'];
const REFRESH_MS = 3000;

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
  const input = h('input', { type: 'text', id: 'rental-id', name: 'rentalId', value, autocomplete: 'off', spellcheck: 'false', required: true });
  const form = h('form', { class: 'card', id: 'rental-lookup' },
    h('label', { for: 'rental-id' }, 'Rental id'),
    h('div', { class: 'row' }, input, h('button', { type: 'submit' }, 'Show')));
  form.addEventListener('submit', (e) => { e.preventDefault(); location.hash = rentalHref(input.value.trim()); });
  return form;
}

export function rentalPage(main, id, { notice, describe }) {
  fill(main, h('h2', {}, 'Rental'), lookupForm(id));
  if (!id) return () => {};
  const out = h('div', { id: 'rental' }, h('p', { class: 'muted' }, 'Reading the rental…'));
  main.append(out);
  let stopped = false;
  let again = null;
  const result = h('p', { id: 'action-result', role: 'status' });

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
      if (!stopped) fill(out, h('p', { class: 'card', id: 'rental-error' }, 'Rental ', h('code', {}, id), ': ', describe(e)));
      return;
    }
    if (stopped) return;
    clearTimeout(again);
    if (UNSETTLED.includes(v.status)) again = setTimeout(show, nextDelay(REFRESH_MS));
    const focused = out.contains(document.activeElement) ? document.activeElement.id : '';
    const byId = new Map(v.history.filter((e) => e.eventId).map((e) => [e.eventId, e]));
    const pay = v.payment || {};
    const facts = h('dl', { class: 'facts' },
      h('dt', {}, 'Status'), h('dd', { id: 'rental-status' }, v.status),
      h('dt', {}, 'Rental'), h('dd', { class: 'mono' }, v.rentalId),
      h('dt', {}, 'Bike'), h('dd', { class: 'mono' }, v.bikeId),
      h('dt', {}, 'Renter'), h('dd', { class: 'mono' }, v.renter),
      h('dt', {}, 'Payment'), h('dd', { class: 'mono' }, v.paymentReference),
      h('dt', {}, 'Payment status'), h('dd', { id: 'payment-status' }, pay.status || 'none yet'),
      h('dt', {}, 'Refund'), h('dd', { id: 'refund-state' }, pay.refund || 'none'));
    const timeline = h('ol', { class: 'timeline', id: 'timeline' }, v.history.map((e) => {
      const kind = streamKind(e.stream);
      return h('li', { class: 'stream-' + kind, 'data-type': e.type },
        h('div', {}, h('span', { class: 'event-type' }, e.type), ' ', h('span', { class: 'badge' }, kind)),
        h('div', { class: 'event-meta' }, time(e.at), ' · ', h('span', { class: 'mono' }, `${e.stream} v${e.version}`), ' · ',
          h('span', { class: 'cause' }, cause(e, byId))),
        details(e.data).length ? h('div', { class: 'event-data mono' }, details(e.data).join('  ')) : null);
    }));
    const cancel = h('button', { type: 'button', id: 'cancel-payment', class: 'danger' }, 'Cancel payment…');
    cancel.addEventListener('click', async () => {
      if (!(await confirm(`Cancel the payment of rental ${v.rentalId}? A confirmed payment declines it.`, 'Cancel payment', true))) return;
      try {
        const r = await cancelPayment(v.rentalId);
        fill(result, 'Cancel payment: ', h('span', { class: 'outcome ' + r.outcome, id: 'cancel-outcome' }, r.outcome));
        show();
      } catch (e) { fill(result, describe(e)); }
    });
    const actions = [cancel];
    if (v.status === 'approved') {
      const ret = h('button', { type: 'button', id: 'record-return' }, 'Record return…');
      ret.addEventListener('click', async () => {
        if (!(await confirm(`Record that bike ${v.bikeId} of rental ${v.rentalId} came back?`, 'Record return'))) return;
        try {
          const b = await returnBike(v.bikeId, v.rentalId);
          fill(result, 'Return recorded: bike ', h('code', {}, b.bikeId), ' is ', b.status, '.');
          show();
        } catch (e) { fill(result, describe(e)); }
      });
      actions.push(ret);
    }
    fill(out,
      h('section', { class: 'card' }, facts, h('div', { class: 'row' }, actions), result),
      h('h3', {}, `Timeline (${v.history.length} events)`), timeline);
    if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
    notice('');
  };
  show();
  return () => { stopped = true; clearTimeout(again); };
}
