// A refund made by hand: the form an operator records, once money owed back for a
// rental that did not get its bike was paid by other means (a bank transfer,
// say), the amount (what is owed, in minor units of its currency) and the
// operator's own reference of the refund; then a confirmation that says exactly
// what will be recorded, and the POST. A rental may owe more than one refund (its
// own payment's, and one per other provider payment that took money under its
// reference): each is its own form, named by the provider payment it is owed on.
// Who recorded it is the token's subject: the API takes it from the token, never
// from the form.
// docs/decisions/0027-a-refund-made-by-hand.md,
// docs/decisions/0033-every-debt-is-listed-until-paid-back.md

import { refundMadeByHand } from './api.js';
import { confirm, fill, h, time } from './dom.js';
import { CURRENCY_DECIMALS, MAX_AMOUNT, OPERATOR_REFERENCE_MAX_LENGTH, REFUND_FOR_HANDS } from './rules.js';

// debtsOf returns the refunds rental view v owes that an operator may record as
// made by hand (rules.js), each { paymentId, amount, currency, own }: its own
// payment's (for what the provider took), unless the provider is making it or it is made, then each owed on
// another provider payment, whose amount and currency are undefined where the
// provider did not say them.
export function debtsOf(v) {
  const pay = v && v.payment;
  if (!pay) return [];
  const out = [];
  // What the payment's own refund owes is what the provider took (taken), which
  // may not be what the payment was prepared for.
  const owed = pay.taken || { amount: pay.amount, currency: pay.currency };
  if (REFUND_FOR_HANDS.includes(pay.refund)) out.push({ paymentId: pay.paymentId, amount: owed.amount, currency: owed.currency, own: true });
  for (const u of pay.unexpectedRefunds || []) {
    if (REFUND_FOR_HANDS.includes(u.refund)) out.push({ paymentId: u.paymentId, amount: u.amount, currency: u.currency, own: false });
  }
  return out;
}

// forHands reports whether rental view v owes a refund an operator may record as
// made by hand.
export function forHands(v) { return debtsOf(v).length > 0; }

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

// owedWords says what a refund owes, as people read it: an amount the provider did
// not say reads so.
export function owedWords(amount, currency) {
  if (!amount) return currency ? `an amount of ${currency} the provider did not say` : 'an amount the provider did not say';
  return money(amount, currency);
}

// byHandForm returns the form that records refund debt (one of debtsOf(v)) of
// rental view v made by hand, for an operator signed in as subject. done(result)
// is called once it is recorded.
export function byHandForm(v, { debt, describe, subject, done }) {
  const d = debt || debtsOf(v)[0];
  const amount = h('input', { type: 'number', id: 'byhand-amount', name: 'amount', required: true, min: 1, max: MAX_AMOUNT, step: 1,
    value: d.amount ? String(d.amount) : '', inputmode: 'numeric', 'aria-describedby': 'byhand-amount-words' });
  // A currency the provider did not say is the operator's to name.
  const currency = d.currency ? null : h('input', { type: 'text', id: 'byhand-currency', name: 'currency', required: true, pattern: '[A-Z]{3}',
    maxlength: 3, autocomplete: 'off', spellcheck: 'false', title: 'The currency paid back: 3 upper-case letters (ISO 4217)' });
  const currencyOf = () => d.currency || (currency ? currency.value : '');
  const words = h('span', { class: 'muted', id: 'byhand-amount-words' });
  const showWords = () => {
    const n = Number(amount.value);
    fill(words, amount.value !== '' && Number.isInteger(n) && n > 0 && /^[A-Z]{3}$/.test(currencyOf()) ? '= ' + money(n, currencyOf()) : '');
  };
  amount.addEventListener('input', showWords);
  if (currency) currency.addEventListener('input', showWords);
  showWords();
  const reference = h('input', { type: 'text', id: 'byhand-reference', name: 'reference', required: true, autocomplete: 'off',
    spellcheck: 'false', maxlength: OPERATOR_REFERENCE_MAX_LENGTH, title: 'Your reference of the refund, up to ' + OPERATOR_REFERENCE_MAX_LENGTH + ' characters' });
  const result = h('div', { id: 'byhand-result', role: 'status' });
  const submit = h('button', { type: 'submit', id: 'byhand-submit' }, 'Record refund…');
  const taken = d.own
    ? ['Rental ', h('code', {}, v.rentalId), ', payment ', h('code', {}, v.paymentReference), ': ', owedWords(d.amount, d.currency), ' is owed back.']
    : ['Rental ', h('code', {}, v.rentalId), ', payment ', h('code', {}, v.paymentReference), ': ', owedWords(d.amount, d.currency),
      ' the provider took on another of its payments, ', h('code', { id: 'byhand-payment-id' }, d.paymentId), ', is owed back.'];
  const form = h('form', { class: 'card', id: 'byhand-form', 'data-payment-id': d.paymentId },
    h('h3', {}, 'Record a refund made by hand'),
    h('p', { class: 'muted' }, ...taken, ' Pay it back first (a bank transfer, say), then record it here: once, in your name.'),
    h('label', { for: 'byhand-amount' }, `Amount, in minor units of ${d.currency || 'the currency paid back'}`),
    h('div', { class: 'row inline-field' }, amount, d.currency ? h('span', { class: 'currency' }, d.currency) : currency, words),
    h('p', { class: 'muted' }, d.amount ? ['What is owed: ', String(d.amount), '. Any other amount is refused.']
      : 'The provider did not say how much it took: record what you paid back, and in which currency.'),
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
    const cur = currencyOf();
    const on = d.own ? `rental ${v.rentalId}'s payment ${v.paymentReference}` : `the money provider payment ${d.paymentId} took under rental ${v.rentalId}'s payment ${v.paymentReference}`;
    const question = `Record that ${money(n, cur)} (${n} ${cur} in minor units) of ${on} was paid back by hand, under the reference “${ref}”, ` +
      `recorded by ${subject}? It is recorded once and cannot be undone.`;
    if (!(await confirm(question, 'Record refund'))) { fill(result, 'Not sent.'); return; }
    submit.disabled = true; // one request at a time: a second would be refused as recorded
    try {
      const more = d.own ? {} : { paymentId: d.paymentId };
      if (currency) more.currency = cur;
      const r = await refundMadeByHand(v.rentalId, n, ref, more);
      fill(form, h('h3', {}, 'Refund made by hand recorded'),
        h('p', { id: 'byhand-recorded' }, money(r.amount, r.currency), ' for rental ', h('code', {}, r.rentalId), ' (provider payment ',
          h('code', {}, r.paymentId), '), under the reference ', h('code', { id: 'byhand-recorded-reference' }, r.reference), ', by ',
          h('code', {}, r.recordedBy), ' at ', time(r.recordedAt), '.'));
      done(r);
    } catch (err) {
      fill(result, describe(err, 'The refund was not recorded.'));
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}
