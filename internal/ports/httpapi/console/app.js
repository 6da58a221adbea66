// The operator console: sign-in, then four pages by the address's fragment
// (#/todo, #/rental/<id>, #/backlog, #/actions).

import { setToken, signedIn, whenRecovered, whenThrottled, whenUnauthenticated } from './api.js';
import { checkOperator, handleCallback, loadConfig, signInLocal, signInOIDC, signOut, subjectOf } from './auth.js';
import { fill, h } from './dom.js';
import { describe } from './problem.js';
import { ID_MAX_LENGTH, ID_PATTERN } from './rules.js';
import { todoPage } from './todo.js';
import { rentalPage } from './rental.js';
import { backlogPage } from './backlog.js';
import { actionsPage } from './actions.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const who = document.getElementById('who');
const noticeEl = document.getElementById('notice');

let config = null;
let leave = () => {};
// subject is who the signed-in token names: what a page shows as the operator.
let subject = '';

// notice says something in the status line (text or nodes); error marks it as a
// failure.
export function notice(what, error = false) {
  noticeEl.className = error ? 'error' : '';
  fill(noticeEl, what);
}

function signInPage(reason) {
  nav.hidden = true;
  fill(who);
  const content = [h('h2', {}, 'Sign in')];
  if (reason) content.push(h('p', { class: 'muted' }, reason));
  if (config.signIn === 'local') {
    const sub = h('input', { type: 'text', id: 'sub', name: 'sub', value: 'operator', autocomplete: 'username', required: true, pattern: ID_PATTERN, maxlength: ID_MAX_LENGTH,
      title: 'Letters, digits, _ and -, up to ' + ID_MAX_LENGTH });
    const op = h('input', { type: 'checkbox', id: 'as-operator', name: 'operator', checked: true });
    const form = h('form', { class: 'card', id: 'sign-in-local' },
      h('p', {}, 'The local runner\'s own issuer mints the token (POST /local/tokens).'),
      h('label', { for: 'sub' }, 'Subject'), sub,
      h('div', { class: 'row' }, h('label', { class: 'inline', for: 'as-operator' }, op, 'with the operator scope')),
      h('div', { class: 'row' }, h('button', { type: 'submit', id: 'sign-in' }, 'Sign in (local)')));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      signIn(() => signInLocal(sub.value, op.checked));
    });
    content.push(form);
  } else if (config.signIn === 'oidc') {
    const button = h('button', { type: 'button', id: 'sign-in' }, 'Sign in');
    button.addEventListener('click', () => signIn(signInOIDC));
    content.push(h('div', { class: 'card' }, h('p', {}, 'Sign in with the service\'s identity provider; the page keeps the token in memory only, so reloading it signs you out.'), button));
  } else {
    content.push(h('p', { class: 'card' }, 'This deployment has no sign-in for the console.'));
  }
  fill(main, content);
  const first = main.querySelector('input, button');
  if (first) first.focus();
}

async function signIn(getToken) {
  notice('Signing in…');
  try {
    const token = await getToken();
    setToken(token);
    if (!(await checkOperator())) {
      setToken(null);
      notice([h('strong', {}, 'Not an operator.'), ' This token does not carry the operator scope, so the console cannot open the operator routes: sign in with an operator\'s account.'], true);
      signInPage();
      return;
    }
    notice('');
    subject = subjectOf(token);
    fill(who, h('span', { id: 'signed-in-as' }, subject),
      h('button', { type: 'button', class: 'secondary', id: 'sign-out', onclick: () => { leave(); signOut(); notice('Signed out.'); signInPage(); } }, 'Sign out'));
    nav.hidden = false;
    route();
  } catch (e) {
    setToken(null);
    notice(describe(e, 'The sign-in did not succeed.'), true);
  }
}

const pages = { todo: todoPage, rental: rentalPage, backlog: backlogPage, actions: actionsPage };

function route() {
  if (!signedIn()) return;
  leave();
  const parts = location.hash.replace(/^#\/?/, '').split('/');
  const name = pages[parts[0]] ? parts[0] : 'todo';
  let arg = '';
  try { arg = decodeURIComponent(parts.slice(1).join('/')); } catch { arg = parts.slice(1).join('/'); }
  for (const a of nav.querySelectorAll('a')) {
    if (a.dataset.page === name) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  fill(main);
  main.dataset.page = name;
  leave = pages[name](main, arg, { notice, describe, subject }) || (() => {});
}

async function start() {
  if (handleCallback()) {
    fill(main, h('p', { class: 'card' }, 'Sign-in must start from the console\'s own Sign in button.'));
    return;
  }
  whenUnauthenticated(() => { leave(); setToken(null); signInPage('The session ended: sign in again.'); });
  whenThrottled((seconds) => {
    notice(`The API is answering too many requests (429): the console waits ${seconds} s before asking again.`, true);
    noticeEl.dataset.throttled = 'true';
  });
  whenRecovered(() => {
    if (noticeEl.dataset.throttled) { delete noticeEl.dataset.throttled; notice('The API answers again.'); }
  });
  window.addEventListener('hashchange', route);
  try {
    config = await loadConfig();
  } catch (e) {
    notice(describe(e, 'The console\'s configuration could not be read: reload the page to try again.'), true);
    return;
  }
  signInPage();
}

start();
