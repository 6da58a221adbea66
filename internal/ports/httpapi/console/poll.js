// Polling that fits the operator routes' limits: a page asks again only while its
// tab is visible, after a jittered interval, and never before the API's last 429
// (and its Retry-After) allows; a tab coming back into view asks at once.

import { heldFor } from './api.js';

// jittered spreads many tabs' requests over the interval instead of together:
// between 80% and 120% of ms.
export function jittered(ms) { return Math.round(ms * (0.8 + 0.4 * Math.random())); }

// nextDelay is how long to wait before the next request of a poller of interval ms.
export function nextDelay(ms) { return Math.max(jittered(ms), heldFor()); }

// poll calls load (which returns a promise) now and then every interval ms, one
// call at a time, while the page is visible; it returns the function that stops it.
export function poll(load, ms) {
  let timer = null;
  let stopped = false;
  let running = false;
  const schedule = (delay) => {
    clearTimeout(timer);
    if (!stopped && document.visibilityState === 'visible') timer = setTimeout(tick, delay);
  };
  const tick = async () => {
    if (stopped || running) return;
    const wait = heldFor();
    if (wait > 0) { schedule(wait); return; }
    running = true;
    try { await load(); } finally { running = false; }
    schedule(nextDelay(ms));
  };
  const visible = () => { if (document.visibilityState === 'visible') schedule(0); else clearTimeout(timer); };
  document.addEventListener('visibilitychange', visible);
  tick();
  return () => { stopped = true; clearTimeout(timer); document.removeEventListener('visibilitychange', visible); };
}
