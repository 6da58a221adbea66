// Operator commands, each with a confirmation: cancel a rental's payment (the
// answer is cancelled, declined or nothing-to-do), register a bike, record a
// return.

import { cancelPayment, registerBike, returnBike } from './api.js';
import { confirm, fill, h } from './dom.js';
import { ID_MAX_LENGTH, ID_PATTERN } from './rules.js';

// field is a labelled id input: required unless optional, and holding an id's form
// (rules.js), so that the browser refuses an empty or malformed id before anything
// is asked or sent.
function field(id, label, hint, optional = false) {
  const input = h('input', { type: 'text', id, name: id, autocomplete: 'off', spellcheck: 'false', required: !optional,
    pattern: ID_PATTERN, maxlength: ID_MAX_LENGTH, title: 'Letters, digits, _ and -, up to ' + ID_MAX_LENGTH });
  return { input, nodes: [h('label', { for: id }, label), input, hint ? h('p', { class: 'muted' }, hint) : null] };
}

// notDone says, above a refusal, what did not happen, by form.
const notDone = {
  'cancel-form': 'The payment was not cancelled.',
  'register-form': 'The bike was not registered.',
  'return-form': 'The return was not recorded.',
};

function action(id, title, fields, question, label, run, danger = false) {
  const result = h('div', { id: id + '-result', role: 'status' });
  const form = h('form', { class: 'card', id }, h('h3', {}, title), fields.map((f) => f.nodes),
    h('div', { class: 'row' }, h('button', { type: 'submit', class: danger ? 'danger' : '' }, label + '…')), result);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    for (const f of fields) f.input.value = f.input.value.trim();
    if (!form.reportValidity()) { fill(result); return; }
    const values = fields.map((f) => f.input.value);
    if (!(await confirm(question(...values), label, danger))) { fill(result, 'Not sent.'); return; }
    try { fill(result, await run(...values)); } catch (err) { fill(result, actionError(err, notDone[id])); }
  });
  return form;
}

let actionError = String;

export function actionsPage(main, _arg, { describe }) {
  actionError = describe;
  const rental = field('cancel-rental-id', 'Rental id', 'The rental\'s page offers this too, while its payment is open.');
  const bike = field('register-bike-id', 'Bike id', 'Registering a bike that is registered already changes nothing.');
  const retBike = field('return-bike-id', 'Bike id');
  const retRental = field('return-rental-id', 'Rental id (optional)', 'Naming the rental makes the return happen at most once.', true);
  fill(main, h('h2', {}, 'Actions'),
    action('cancel-form', 'Cancel a payment', [rental], (id) => `Cancel the payment of rental ${id}?`, 'Cancel payment',
      async (id) => {
        const r = await cancelPayment(id);
        return ['Rental ', h('code', {}, r.rentalId), ': ', h('span', { class: 'outcome ' + r.outcome }, r.outcome)];
      }, true),
    action('register-form', 'Register a bike', [bike], (id) => `Register bike ${id}?`, 'Register bike',
      async (id) => { const b = await registerBike(id); return ['Bike ', h('code', {}, b.bikeId), ' is ', b.status, '.']; }),
    action('return-form', 'Record a return', [retBike, retRental],
      (b, r) => `Record that bike ${b} came back${r ? ' from rental ' + r : ''}?`, 'Record return',
      async (b, r) => { const x = await returnBike(b, r); return ['Bike ', h('code', {}, x.bikeId), ' is ', x.status, '.']; }));
  return () => {};
}
