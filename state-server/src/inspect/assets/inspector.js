// The inspector's script. Every view works without it; with it, selecting
// a step swaps in the state side without a reload, the arrow keys (or j
// and k) move between steps, the thread page follows the thread live
// through the server-sent event stream (a lost connection resumes with
// Last-Event-ID, which EventSource sends by itself), and the run form
// streams the run it starts into the page.
(() => {
  'use strict';
  const html = (text) => new DOMParser().parseFromString(text, 'text/html');
  // Set by the thread page's part: fetches what is new (steps, runs).
  let refreshThread = null;

  const runForm = document.getElementById('run-form');
  if (runForm) runs(runForm);
  thread();

  function thread() {
    const timeline = document.getElementById('timeline');
    const panel = document.getElementById('panel');
    if (!timeline || !panel) return;

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
          for (const id of ['interrupts', 'runs']) {
            const fresh = doc.getElementById(id);
            const shown = document.getElementById(id);
            if (fresh && shown) shown.replaceWith(document.adoptNode(fresh));
          }
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
        pollRuns();
      }
    }
    refreshThread = refresh;

    // A run's status changes after its last step: while one is pending or
    // running, ask again every second.
    let polling = null;
    function pollRuns() {
      const shown = document.getElementById('runs');
      if (polling || shown?.dataset.active !== 'true') return;
      polling = setTimeout(() => {
        polling = null;
        refresh();
      }, 1000);
    }
    pollRuns();

    if (window.EventSource && timeline.dataset.stream) {
      const url = new URL(timeline.dataset.stream, location.href);
      url.searchParams.set('after', String(after));
      const source = new EventSource(url);
      source.addEventListener('open', () => say('open', 'Live: new steps appear here.'));
      // `updates` from the thread stream; `step` from an Agent Server
      // thread's (its /threads/{id}/stream is the API's).
      for (const name of ['updates', 'step']) {
        source.addEventListener(name, (event) => {
          if (Number(event.lastEventId) > after) refresh();
        });
      }
      source.addEventListener('end', (event) => {
        source.close();
        let end = {};
        try { end = JSON.parse(event.data); } catch (_) { /* an old server */ }
        if (end.reason === 'rewound') {
          say('closed', `A run was rolled back: the steps after step ${end.seq} are gone. Reload to see the thread as it is.`);
        } else {
          say('closed', 'This thread was deleted.');
        }
      });
      source.addEventListener('error', () => {
        if (source.readyState === EventSource.CONNECTING) say('connecting', 'Connection lost; reconnecting…');
        else if (source.readyState === EventSource.CLOSED) say('closed', 'Not following live any more; reload to see new steps.');
      });
    }
  }

  // The run form: posts the run (the server checks it comes from this
  // page), then shows its events as they come and how it ended.
  function runs(form) {
    const status = document.getElementById('run-status');
    const list = document.getElementById('run-events');
    const button = form.querySelector('button[type="submit"]');
    const MAX_EVENTS = 200;
    const MAX_CHARS = 4000;

    function say(state, text) {
      status.dataset.state = state;
      status.textContent = text;
    }

    function json(value) {
      const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
      const pre = document.createElement('pre');
      pre.className = 'json';
      pre.textContent = text.length > MAX_CHARS ? `${text.slice(0, MAX_CHARS)}… (${text.length - MAX_CHARS} more characters)` : text;
      return pre;
    }

    function item(name, value, className) {
      const li = document.createElement('li');
      li.className = className;
      li.dataset.event = name;
      const label = document.createElement('span');
      label.className = 'event-name';
      label.textContent = name;
      li.append(label, json(value));
      return li;
    }

    // The server-sent events of a response body, as [name, data].
    async function* events(body) {
      const reader = body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer = (buffer + value).replace(/\r\n/g, '\n');
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let name = 'message';
          const data = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue; // a heartbeat
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'event') name = text;
            else if (field === 'data') data.push(text);
          }
          if (data.length) yield [name, data.join('\n')];
        }
      }
    }

    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const input = form.elements.input.value;
      if (input.trim()) {
        try {
          JSON.parse(input);
        } catch (error) {
          say('error', `The input is not JSON: ${error.message}`);
          form.elements.input.focus();
          return;
        }
      }
      list.replaceChildren();
      button.disabled = true;
      say('running', 'Starting the run…');
      try {
        const response = await fetch(form.action, {
          method: 'POST',
          credentials: 'same-origin',
          headers: { Accept: 'text/event-stream' },
          body: new URLSearchParams(new FormData(form)),
        });
        if (!response.ok) {
          let detail = response.statusText;
          try {
            const body = await response.json();
            detail = body.detail ?? JSON.stringify(body);
          } catch (_) { /* not JSON: the status says it */ }
          say('error', `The server refused the run (${response.status}): ${detail}`);
          return;
        }
        const page = response.headers.get('x-thread-page');
        const runUrl = response.headers.get('x-run-url');
        if (page && !document.getElementById('timeline')) {
          const link = document.createElement('a');
          link.href = page;
          link.textContent = 'Open the thread';
          const li = document.createElement('li');
          li.className = 'run-thread';
          li.append(link);
          list.append(li);
        }
        let last = null;
        let failed = null;
        let count = 0;
        for await (const [name, data] of events(response.body)) {
          let value;
          try {
            value = JSON.parse(data);
          } catch (_) {
            value = data;
          }
          if (name === 'metadata' && value?.run_id) {
            say('running', `Run ${value.run_id} is running…`);
            continue;
          }
          if (name === 'values') last = value;
          if (name === 'error') failed = value;
          if (++count <= MAX_EVENTS) {
            list.append(item(name, value, 'run-event'));
            list.scrollTop = list.scrollHeight; // the latest in view
          }
        }
        // How it ended, as the server keeps it.
        let ended = failed ? 'error' : 'success';
        if (runUrl) {
          const run = await fetch(runUrl, { credentials: 'same-origin' });
          if (run.ok) ended = (await run.json()).status ?? ended;
        }
        if (last !== null) {
          list.append(item('final state', last, 'run-final'));
          list.scrollTop = list.scrollHeight;
        }
        const shown = count > MAX_EVENTS ? ` (the first ${MAX_EVENTS} of ${count} events shown)` : '';
        const why = failed ? `: ${failed.message ?? failed.detail ?? JSON.stringify(failed)}` : '';
        say(ended === 'success' ? 'done' : 'error', `The run ended: ${ended}${why}${shown}`);
        status.dataset.status = ended;
      } catch (error) {
        say('error', `The run's stream failed: ${error.message}`);
      } finally {
        button.disabled = false;
        refreshThread?.();
      }
    });
  }
})();
