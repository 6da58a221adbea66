// Stuck rentals: those whose process is still open past the payment timeout plus
// the stuck grace, as the sweep finds them (GET /processes/stuck, from the index;
// the browser never scans).

import { stuckRentals } from './api.js';
import { duration, fill, h, rentalHref, time } from './dom.js';

export function backlogPage(main, _arg, { describe }) {
  const stuck = h('div', { id: 'stuck' }, h('p', { class: 'muted' }, 'Reading…'));
  fill(main, h('h2', {}, 'Stuck rentals'),
    h('p', { class: 'muted' }, 'Rentals whose process has not completed in time. The sweep repairs them through the consumers\' own handlers; one that stays here needs a look at its timeline.'),
    stuck);
  let stopped = false;
  (async () => {
    try {
      const list = await stuckRentals();
      if (stopped) return;
      if (list.count === 0) { fill(stuck, h('p', {}, 'No rental is stuck.')); return; }
      fill(stuck, h('div', { class: 'table-wrap' }, h('table', {},
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Rental'), h('th', { scope: 'col' }, 'Requested at'),
          h('th', { scope: 'col' }, 'Stuck since'), h('th', { scope: 'col', class: 'num' }, 'Age'))),
        h('tbody', {}, list.rentals.map((r) => h('tr', { 'data-rental': r.rentalId },
          h('td', {}, h('a', { href: rentalHref(r.rentalId), class: 'mono' }, r.rentalId)),
          h('td', {}, time(r.requestedAt)), h('td', {}, time(r.stuckSince)),
          h('td', { class: 'num' }, duration(r.ageSeconds))))))));
    } catch (e) {
      if (!stopped) fill(stuck, h('p', {}, 'The stuck rentals could not be read: ' + describe(e)));
    }
  })();
  return () => { stopped = true; };
}
