// DOM helpers. Everything the console shows is built with these: elements by
// document.createElement, text by text nodes. No data is ever parsed as HTML, so
// markup in an id or an event's field stays text.

// h makes an element: props set attributes (class, data-*, aria-*, ...) and
// on<event> listeners; children are nodes or text.
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// clear empties an element and fills it with children.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// rentalHref is the console's address of a rental's page.
export function rentalHref(id) {
  return '#/rental/' + encodeURIComponent(id);
}

// clock writes an instant the one way the console writes times: in UTC, to the
// second, with the zone ("2026-12-01 18:40:55 UTC").
export function clock(d) {
  return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

// time renders an instant as a <time> element, written by clock.
export function time(iso) {
  const d = iso instanceof Date ? iso : new Date(iso);
  if (Number.isNaN(d.getTime())) return h('span', {}, String(iso));
  return h('time', { datetime: d.toISOString() }, clock(d));
}

// duration renders whole seconds as "1h 02m", "3m 05s" or "12s".
export function duration(seconds) {
  let s = Math.max(0, Math.floor(seconds));
  const d = Math.floor(s / 86400); s -= d * 86400;
  const hr = Math.floor(s / 3600); s -= hr * 3600;
  const m = Math.floor(s / 60); s -= m * 60;
  const pad = (n) => String(n).padStart(2, '0');
  if (d > 0) return `${d}d ${pad(hr)}h`;
  if (hr > 0) return `${hr}h ${pad(m)}m`;
  if (m > 0) return `${m}m ${pad(s)}s`;
  return `${s}s`;
}

// confirm asks a question in a modal dialog and resolves to true when the
// operator confirms. Escape and "Keep" resolve to false.
export function confirm(question, confirmLabel, danger = false) {
  return new Promise((resolve) => {
    const ok = h('button', { type: 'button', class: danger ? 'danger' : '', 'data-confirm': 'yes' }, confirmLabel);
    const keep = h('button', { type: 'button', class: 'secondary', 'data-confirm': 'no' }, 'Keep');
    const dialog = h('dialog', { 'aria-labelledby': 'confirm-question' },
      h('p', { id: 'confirm-question' }, question),
      h('div', { class: 'row' }, ok, keep));
    const done = (answer) => { dialog.close(); dialog.remove(); resolve(answer); };
    ok.addEventListener('click', () => done(true));
    keep.addEventListener('click', () => done(false));
    dialog.addEventListener('cancel', (e) => { e.preventDefault(); done(false); });
    document.body.append(dialog);
    dialog.showModal();
    keep.focus();
  });
}
