// The inspector's script. Every view works without it; with it, selecting
// a step swaps in the state side without a reload, the arrow keys (or j
// and k) move between steps, and the thread page follows the thread live
// through the server-sent event stream (a lost connection resumes with
// Last-Event-ID, which EventSource sends by itself).
(() => {
  'use strict';
  const timeline = document.getElementById('timeline');
  const panel = document.getElementById('panel');
  if (!timeline || !panel) return;

  const html = (text) => new DOMParser().parseFromString(text, 'text/html');

  function mark(item) {
    for (const old of timeline.querySelectorAll('li.step.selected')) {
      old.classList.remove('selected');
      old.querySelector('a.select')?.removeAttribute('aria-current');
    }
    item.classList.add('selected');
    item.querySelector('a.select')?.setAttribute('aria-current', 'step');
  }

  // The state after a step, and the changes since the one before it.
  let selecting = 0;
  async function select(link, push) {
    const url = new URL(link.href, location.href);
    const part = new URL(url);
    part.searchParams.set('part', 'panel');
    const mine = ++selecting;
    panel.setAttribute('aria-busy', 'true');
    try {
      const response = await fetch(part, { credentials: 'same-origin' });
      const doc = html(await response.text());
      if (mine !== selecting) return; // a later selection won
      const content = response.ok ? doc.body : doc.getElementById('main') || doc.body;
      panel.replaceChildren(...[...content.childNodes].map((n) => document.adoptNode(n)));
      mark(link.closest('li.step'));
      if (push) history.pushState(null, '', url);
    } catch (error) {
      if (mine === selecting) location.assign(url); // let the server say it
    } finally {
      if (mine === selecting) panel.removeAttribute('aria-busy');
    }
  }

  timeline.addEventListener('click', (event) => {
    const link = event.target.closest('a.select');
    if (!link || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    select(link, true);
  });

  timeline.addEventListener('keydown', (event) => {
    const link = event.target.closest('a.select');
    if (!link) return;
    const item = link.closest('li.step');
    let next;
    if (event.key === 'ArrowDown' || event.key === 'j') next = item.nextElementSibling;
    else if (event.key === 'ArrowUp' || event.key === 'k') next = item.previousElementSibling;
    else return;
    event.preventDefault();
    const target = next?.querySelector('a.select');
    if (target) {
      target.focus();
      select(target, true);
    }
  });

  window.addEventListener('popstate', () => {
    const seq = new URL(location.href).searchParams.get('seq');
    const link = seq && document.querySelector(`#step-${CSS.escape(seq)} a.select`);
    if (link) select(link, false);
    else location.reload();
  });

  // Live: each step the stream announces is fetched as timeline items.
  const status = document.getElementById('live');
  const headLabel = document.getElementById('head');
  const following = timeline.dataset.following === 'true';
  let after = Number(following ? timeline.dataset.after : headLabel?.dataset.seq) || 0;
  let busy = false;
  let again = false;

  function say(state, text) {
    if (!status) return;
    status.dataset.state = state;
    status.textContent = text;
  }

  async function refresh() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      do {
        again = false;
        const url = new URL(timeline.dataset.live, location.href);
        url.searchParams.set('after', String(after));
        const response = await fetch(url, { credentials: 'same-origin' });
        if (!response.ok) break;
        const doc = html(await response.text());
        const fresh = doc.getElementById('new-steps');
        if (!fresh) break;
        const head = Number(fresh.dataset.head);
        const last = Number(fresh.dataset.after) || after;
        if (following) {
          for (const item of [...fresh.children]) timeline.appendChild(document.adoptNode(item));
          timeline.dataset.after = String(last);
        }
        after = following ? Math.max(after, last) : Math.max(after, head);
        if (following && after < head) again = true;
        const interrupts = doc.getElementById('interrupts');
        const shown = document.getElementById('interrupts');
        if (interrupts && shown) shown.replaceWith(document.adoptNode(interrupts));
        if (headLabel) {
          headLabel.dataset.seq = String(head);
          headLabel.textContent = `${head} steps`;
        }
        say('open', following ? `Live: step ${head} is the latest.` : `Live: the thread has ${head} steps; later steps are past this window.`);
      } while (again);
    } catch (error) {
      say('error', 'Could not fetch the new steps; they appear on reload.');
    } finally {
      busy = false;
    }
  }

  if (window.EventSource && timeline.dataset.stream) {
    const url = new URL(timeline.dataset.stream, location.href);
    url.searchParams.set('after', String(after));
    const source = new EventSource(url);
    source.addEventListener('open', () => say('open', 'Live: new steps appear here.'));
    source.addEventListener('updates', (event) => {
      if (Number(event.lastEventId) > after) refresh();
    });
    source.addEventListener('end', () => {
      source.close();
      say('closed', 'This thread was deleted.');
    });
    source.addEventListener('error', () => {
      if (source.readyState === EventSource.CONNECTING) say('connecting', 'Connection lost; reconnecting…');
      else if (source.readyState === EventSource.CLOSED) say('closed', 'Not following live any more; reload to see new steps.');
    });
  }
})();
