// A refund made by hand: the form an operator records, once the money owed back
// for a rental that did not get its bike was paid by other means (a bank
// transfer, say), the amount (what is owed, in minor units of the payment's
// currency) and the operator's own reference of the refund; then a confirmation
// that says exactly what will be recorded, and the POST. Who recorded it is the
// token's subject: the API takes it from the token, never from the form.
// docs/decisions/0027-a-refund-made-by-hand.md

import { refundMadeByHand } from './api.js';
import { confirm, fill, h, time } from './dom.js';
import { CURRENCY_DECIMALS, MAX_AMOUNT, OPERATOR_REFERENCE_MAX_LENGTH, REFUND_FOR_HANDS } from './rules.js';

// forHands reports whether rental view v owes a refund an operator may record as
// made by hand (rules.js): one the provider is making, or that is made, is not.
export function forHands(v) {
  return Boolean(v && v.payment && REFUND_FOR_HANDS.includes(v.payment.refund));
}

// money writes an amount in minor units of a currency as people read it
// ("EUR 15.00"), with the decimals payment providers take the currency in
// (rules.js, CURRENCY_DECIMALS: two unless listed), which are not always the
// browser's (ISK, IDR); for a code the browser cannot format, the minor units and
// the code.
export function money(amount, currency) {
  const digits = Object.hasOwn(CURRENCY_DECIMALS, currency) ? CURRENCY_DECIMALS[currency] : 2;
  try {
    const f = new Intl.NumberFormat('en', { style: 'currency', currency, currencyDisplay: 'code', minimumFractionDigits: digits, maximumFractionDigits: digits });
    return f.format(amount / 10 ** digits).replace(/\u00a0/g, ' ');
  } catch {
    return `${amount} ${currency} (minor units)`;
  }
}

// owedOf is what rental view v's payment owes back: what the provider took
// (taken), which may not be what the payment was prepared for.
function owedOf(v) {
  const p = v.payment;
  return p.taken || { amount: p.amount, currency: p.currency };
}

// byHandForm returns the form that records the refund owed of rental view v, for
// an operator signed in as subject. done(result) is called once it is recorded.
export function byHandForm(v, { describe, subject, done }) {
  const pay = owedOf(v);
  const amount = h('input', { type: 'number', id: 'byhand-amount', name: 'amount', required: true, min: 1, max: MAX_AMOUNT, step: 1,
    value: String(pay.amount), inputmode: 'numeric', 'aria-describedby': 'byhand-amount-words' });
  const words = h('span', { class: 'muted', id: 'byhand-amount-words' });
  const showWords = () => {
    const n = Number(amount.value);
    fill(words, amount.value !== '' && Number.isInteger(n) && n > 0 ? '= ' + money(n, pay.currency) : '');
  };
  amount.addEventListener('input', showWords);
  showWords();
  const reference = h('input', { type: 'text', id: 'byhand-reference', name: 'reference', required: true, autocomplete: 'off',
    spellcheck: 'false', maxlength: OPERATOR_REFERENCE_MAX_LENGTH, title: 'Your reference of the refund, up to ' + OPERATOR_REFERENCE_MAX_LENGTH + ' characters' });
  const result = h('div', { id: 'byhand-result', role: 'status' });
  const submit = h('button', { type: 'submit', id: 'byhand-submit' }, 'Record refund…');
  const form = h('form', { class: 'card', id: 'byhand-form' },
    h('h3', {}, 'Record a refund made by hand'),
    h('p', { class: 'muted' }, 'Rental ', h('code', {}, v.rentalId), ', payment ', h('code', {}, v.paymentReference),
      ': ', money(pay.amount, pay.currency), ' is owed back. Pay it back first (a bank transfer, say), then record it here: once, in your name.'),
    h('label', { for: 'byhand-amount' }, `Amount, in minor units of ${pay.currency}`),
    h('div', { class: 'row inline-field' }, amount, h('span', { class: 'currency' }, pay.currency), words),
    h('p', { class: 'muted' }, 'What is owed: ', String(pay.amount), '. Any other amount is refused.'),
    h('label', { for: 'byhand-reference' }, 'Your reference of the refund'), reference,
    h('p', { class: 'muted' }, 'A bank transfer\'s id, say: whatever finds the payment back in your records.'),
    h('div', { class: 'row' }, submit), result);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    fill(result);
    reference.value = reference.value.trim();
    if (!form.reportValidity()) return;
    const n = Number(amount.value);
    const ref = reference.value;
    const question = `Record that ${money(n, pay.currency)} (${n} ${pay.currency} in minor units) of rental ${v.rentalId}'s payment ` +
      `${v.paymentReference} was paid back by hand, under the reference “${ref}”, recorded by ${subject}? It is recorded once and cannot be undone.`;
    if (!(await confirm(question, 'Record refund'))) { fill(result, 'Not sent.'); return; }
    submit.disabled = true; // one request at a time: a second would be refused as recorded
    try {
      const r = await refundMadeByHand(v.rentalId, n, ref);
      fill(form, h('h3', {}, 'Refund made by hand recorded'),
        h('p', { id: 'byhand-recorded' }, money(r.amount, r.currency), ' for rental ', h('code', {}, r.rentalId), ', under the reference ',
          h('code', { id: 'byhand-recorded-reference' }, r.reference), ', by ', h('code', {}, r.recordedBy), ' at ', time(r.recordedAt), '.'));
      done(r);
    } catch (err) {
      fill(result, describe(err, 'The refund was not recorded.'));
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}
