// The follower's page (ui/follow.py): listen to the room's stream of views and draw each one. A view arrives with
// its figures as Plotly data and its text, built once on the server for everyone with the same look; this page
// only draws it. "Explore on my own" opens the full app on the view shown; a wrong code says so, an ended lecture
// says it ended, and the join box stays usable either way.
(() => {
  const $ = (sel) => document.querySelector(sel);
  const params = new URLSearchParams(window.location.search);
  const code = (params.get('follow') || '').trim().toUpperCase();
  const darkQ = window.matchMedia('(prefers-color-scheme: dark)');
  const narrowQ = window.matchMedia('(max-width: 640px)');
  const root = document.documentElement;
  const SIDE_BY_SIDE = new Set(['topk-plot', 'cross-step-plot']);   // a row in the app's own page too
  let stream = null, version = 0, latest = null, polling = false, plotly = null, etag = null, polls = 0;

  const say = (text, cls) => {
    $('#follow-bar .follow-status').textContent = text;
    $('#follow-bar').className = cls || '';
  };
  const message = (text) => { const m = $('#message'); m.textContent = text || ''; m.hidden = !text; };
  const joinInstead = (text) => {
    document.body.classList.add('joining');
    message(text);
    const box = $('#join-code');
    box.focus();
  };
  const look = () => `look=${darkQ.matches ? 'dark' : 'light'}&narrow=${narrowQ.matches ? 1 : 0}`;

  // plotly.js (large, cached by the browser) loads beside the stream: the text of a view shows before it does.
  let plotlyP = null;
  const loadPlotly = () => plotlyP || (plotlyP = new Promise((resolve) => {
    if (window.Plotly) { resolve(window.Plotly); return; }
    const s = document.createElement('script');
    s.src = '/live/static/plotly.min.js';
    s.onload = () => resolve(window.Plotly);
    s.onerror = () => { plotlyP = null; resolve(null); };
    document.head.appendChild(s);
  }));

  // Figures below the fold are drawn only when they scroll onto the screen, never ahead ('when the page is idle',
  // or 200 px before): the all-heads grid held a page 0.8-2.2 s while the room's other pages drew too, and the
  // presenter's next change waited for it (issue 43: bench/follower_lag.py, the rehearsal).
  const SLIVER = 120;                     // px of a figure on screen before it counts as shown (and is drawn)
  const pending = new Map();
  const drawOne = (box) => {
    const job = pending.get(box);
    if (!job || !plotly) return Promise.resolve();
    pending.delete(box);
    const [fig, config, v] = job, t0 = performance.now();
    return plotly.react(box, fig.data || [], fig.layout || {}, config)
      .then(() => note(`scrolled to ${box.dataset.id} ${Math.round(performance.now() - t0)} ms`, v))
      .catch((e) => message(`This figure could not be drawn here (${e && e.message}).`));
  };
  const seen = new IntersectionObserver((entries) => entries.forEach((e) => {
    if (e.isIntersecting) { seen.unobserve(e.target); drawOne(e.target); }
  }), { rootMargin: `0px 0px -${SLIVER}px 0px` });     // more than a sliver on screen, as onScreen below

  const drop = (box) => {                 // a figure's box leaves the page: nothing of it stays behind
    pending.delete(box);
    seen.unobserve(box);
    if (window.Plotly && box.classList.contains('js-plotly-plot')) window.Plotly.purge(box);
  };
  const partBox = (i, part) => {
    const parts = $('#parts');
    let box = parts.children[i];
    if (!box || box.dataset.id !== part.id || !box.classList.contains(part.type)) {
      const fresh = document.createElement('div');
      fresh.dataset.id = part.id;
      fresh.classList.add('part', part.type);
      if (box) { drop(box); parts.replaceChild(fresh, box); } else parts.appendChild(fresh);
      box = fresh;
    }
    return box;                           // (its classes kept: plotly.js marks its own figures with one)
  };

  const draw = async (msg) => {
    const view = msg.view || {};
    $('#view-head').hidden = false;
    $('#view-title').textContent = view.title || '';
    $('#view-where').textContent = view.where || '';
    document.title = `${view.title || 'Lecture'} · room ${code}`;
    if (view.text) {
      $('#sentence').hidden = false;
      $('#view-en').textContent = view.text;
      $('#view-fr').textContent = view.french || '';
    }
    const notes = $('#view-notes');
    notes.replaceChildren(...(view.notes || []).map((n) => {
      const p = document.createElement('p'); p.className = 'note'; p.textContent = n; return p;
    }));
    message(view.error || '');
    if (view.explore) {
      const a = $('#follow-explore');
      a.href = `${view.explore}&room=${encodeURIComponent(code)}`;
      a.hidden = false;
    }
    pending.clear();
    const parts = view.parts || [];
    const todo = [];
    parts.forEach((part, i) => {
      const box = partBox(i, part);
      if (part.type === 'html') {
        box.innerHTML = part.html;        // built on the server from escaped pieces, as the app's own page shows it
      } else {
        box.classList.toggle('half', SIDE_BY_SIDE.has(part.id) && !narrowQ.matches);
        todo.push([box, part.figure]);
      }
    });
    while ($('#parts').children.length > parts.length) {
      const last = $('#parts').lastElementChild;
      drop(last);
      last.remove();
    }
    document.body.dataset.version = String(msg.version);
    note('text', msg.version);
    if (todo.length) {
      // The step line, the sentence and the title are on screen before any figure is drawn: a big figure holds a
      // page 0.3-1 s, and the student should not wait that long to see that the presenter moved on.
      await new Promise((resolve) => { requestAnimationFrame(() => setTimeout(resolve, 0)); setTimeout(resolve, 100); });
      if (msg !== latest) return;
      plotly = plotly || await loadPlotly();
      if (msg !== latest) return;              // a newer view came while plotly.js loaded: it draws instead
      if (!plotly) { message('The figures could not be loaded: reload the page.'); return; }
      const config = { responsive: true, displaylogo: false, displayModeBar: !narrowQ.matches && 'hover',
                       scrollZoom: false };
      // The figures on screen first, one at a time with the page free between them (a new view that arrives
      // meanwhile is read at once and the rest of this one dropped); those below the fold when they scroll into
      // view (a big figure takes a phone 0.1-0.4 s alone, seconds while the room's other pages draw too).
      todo.forEach(([box, fig]) => { box.style.minHeight = `${(fig.layout && fig.layout.height) || 450}px`; });   // 450: plotly.js's default
      const onScreen = ([box]) => {       // more than a sliver of it on screen (a student may have scrolled down)
        const r = box.getBoundingClientRect();
        return r.top < window.innerHeight - SLIVER && r.bottom > 0;
      };
      const later = todo.filter((t) => !onScreen(t));
      for (const [i, [box, fig]] of todo.filter(onScreen).entries()) {
        if (i > 0) await new Promise((resolve) => setTimeout(resolve, 0));
        if (msg !== latest) return;
        const t0 = performance.now();
        await plotly.react(box, fig.data || [], fig.layout || {}, config);
        note(`plot ${box.dataset.id} ${Math.round(performance.now() - t0)} ms`, msg.version);
      }
      if (msg !== latest) return;              // a newer view came during the last draw: its figures wait instead
      later.forEach(([box, fig]) => { pending.set(box, [fig, config, msg.version]); seen.observe(box); });
    }
    if (msg === latest) { document.body.dataset.drawn = String(msg.version); note('drawn', msg.version); }
  };

  // when each view arrived and was drawn (ms since the page opened): for benchmarks and curious students
  const log = window.followLog = [];
  const note = (what, v) => { log.push([what, v, Math.round(performance.now())]); if (log.length > 200) log.shift(); };
  const received = (msg) => {
    if (!msg || typeof msg.version !== 'number' || msg.version < version) return;
    lostSince.t = 0;
    note('received', msg.version);
    version = msg.version;
    latest = msg;
    say(`Following the presenter · room ${code}`);
    if (window.roomVote) window.roomVote.show(msg.question || null, code);   // the room's question (vote.js)
    draw(msg).catch((e) => message(`This view could not be drawn here (${e && e.message}).`));
  };

  const ended = () => {
    if (stream) stream.close();
    stream = null;
    say(`The lecture ${code} has ended: what it showed last stays here.`, 'ended');
    if (!latest) joinInstead(`The lecture ${code} has ended.`);
  };
  const unknown = (text) => {
    say(`No lecture with code ${code}`, 'unknown');
    joinInstead(text || `No lecture with code ${code}: check the code on the screen and type it again.`);
  };
  const INTERRUPTED = 'The live connection is interrupted: retrying…';
  const interrupted = () => say(latest ? `${INTERRUPTED} What the presenter showed last stays here.` : INTERRUPTED,
                                'lost');
  // A room this page was following and the server no longer knows: a restart of the app (or of its room store)
  // lost it, and the presenter's page takes it up again under the same code when it reconnects. Wait for it.
  const lostSince = { t: 0 };
  const waitForPresenter = () => {
    if (!lostSince.t) lostSince.t = Date.now();
    say(`The lecture ${code} is not running just now (the app restarted, or the lecture ended): waiting for the `
        + 'presenter… What it showed last stays here.', 'lost');
    return Date.now() - lostSince.t < 60000 ? 3000 : 15000;   // soon at first, then rarely
  };

  // Where a stream cannot be kept open (a proxy that buffers it), or to learn why it was refused: the view, 304
  // while nothing changed.
  const poll = async () => {
    try {
      const r = await fetch(`/live/rooms/${code}/view?${look()}`, { headers: etag ? { 'If-None-Match': etag } : {},
                                                                     cache: 'no-store' });
      let wait = 700;
      if (r.status === 200 || r.status === 304) {
        lostSince.t = 0;
        if (r.status === 200) { etag = r.headers.get('ETag'); received(await r.json()); }
        if (latest) say(`Following the presenter · room ${code}`);
        if (window.EventSource && ++polls % 20 === 0) { polling = false; listen(); return; }   // the stream again?
      } else if (r.status === 404) {
        const body = await r.json().catch(() => ({}));
        if (body.ended) { ended(); return; }
        if (!latest) { unknown(body.error); return; }
        wait = waitForPresenter();
      } else if (r.status === 429) {
        const body = await r.json().catch(() => ({}));
        say(body.error || 'Too many requests from this network: waiting.', 'lost');
        wait = 1000 * (Number(r.headers.get('Retry-After')) || 60);
      } else {
        interrupted();                  // 503: the room store does not answer; a proxy's 502 while the app restarts
        wait = 2000;
      }
      setTimeout(poll, wait);
      return;
    } catch (e) {
      interrupted();
    }
    setTimeout(poll, 2000);
  };

  const listen = () => {
    if (stream) stream.close();
    if (!window.EventSource) { if (!polling) { polling = true; poll(); } return; }
    stream = new EventSource(`/live/rooms/${code}/events?${look()}`);
    stream.onopen = () => { if (latest) say(`Following the presenter · room ${code}`); };
    stream.onmessage = (ev) => { try { received(JSON.parse(ev.data)); } catch (e) { /* not a view */ } };
    stream.addEventListener('end', ended);
    stream.addEventListener('interrupted', interrupted);         // the room store stopped answering: views wait
    stream.addEventListener('lost', () => { waitForPresenter(); });   // a restart lost the room: it comes back
    stream.addEventListener('resumed', () => { if (latest) say(`Following the presenter · room ${code}`); });
    stream.onerror = () => {
      if (stream && stream.readyState === EventSource.CLOSED) {   // refused (404, 503, a proxy): polling says why
        stream = null;
        if (!polling) { polling = true; poll(); }
      } else {
        interrupted();                                            // the browser reconnects by itself
      }
    };
  };

  const setLook = () => root.classList.toggle('dark', darkQ.matches);
  setLook();
  $('#join-code').value = '';
  if (!code) { say('Join a lecture', 'unknown'); joinInstead(''); return; }
  if (!/^[A-Z0-9]{4,12}$/.test(code)) { unknown(`"${code.slice(0, 20)}" is not a lecture code: a code has 4 to 12 letters and digits.`); return; }
  say(`Joining the lecture ${code}…`);
  listen();
  loadPlotly().then((p) => { plotly = plotly || p; });
  // the figures are drawn for the look and the width of this screen: a change of either asks for them again
  const again = () => { setLook(); version = 0; etag = null; if (!polling && stream) listen(); };
  darkQ.addEventListener('change', again);
  narrowQ.addEventListener('change', again);
})();
