// The room answers, on a follower's page (ui/follow.py, ui/votes.py): the presenter's question arrives with the
// room's view (follow.js hands it here), the student taps an answer (or types a word), the server says at once that
// it has it, and after the reveal the page shows the model's answer beside the student's own and the room's count.
// One answer per student: a random token kept in this browser (never a name); a second answer replaces the first.
// Every text reaches the page as text (textContent), never as markup.
(() => {
  const TOKEN_KEY = 'transformer-student';
  const $ = (sel) => document.querySelector(sel);
  let code = '', q = null, shownAs = '', mine = null, typed = '';

  const token = () => {
    if (window.voteToken) return window.voteToken;       // (a browser that keeps nothing: one token per page)
    let t = null;
    try { t = localStorage.getItem(TOKEN_KEY); } catch (e) { /* private mode: one token for this page */ }
    if (!t || !/^[A-Za-z0-9_-]{16,64}$/.test(t)) {
      const bytes = new Uint8Array(18);
      crypto.getRandomValues(bytes);
      t = btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
      try { localStorage.setItem(TOKEN_KEY, t); } catch (e) { window.voteToken = t; }
    }
    return window.voteToken || t;
  };
  const mineKey = () => `transformer-vote:${code}:${q.id}:${q.asked}`;
  const remember = (m) => {
    mine = m;
    try {
      for (let i = localStorage.length - 1; i >= 0; i--) {     // answers kept for this lecture's room only
        const k = localStorage.key(i);
        if (k && k.startsWith('transformer-vote:') && !k.startsWith(`transformer-vote:${code}:`)) localStorage.removeItem(k);
      }
      localStorage.setItem(mineKey(), JSON.stringify(m));
    } catch (e) { /* kept on this page only */ }
  };
  const recall = () => { try { return JSON.parse(localStorage.getItem(mineKey()) || 'null'); } catch (e) { return null; } };

  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const words = (p) => (p.startsWith('<') && p.endsWith('>') ? p : p.startsWith('\u2581') ? p.slice(1) : `…${p}`);
  const labelOf = (key) => (q.kind === 'next' ? words(key) : (q.options[Number(key)] ?? key));
  const say = (text, cls) => { const s = $('#vote .vote-said'); if (s) { s.textContent = text; s.className = `vote-said ${cls || ''}`; } };

  const send = async (answer) => {
    const asked = q;
    say('Sending…');
    let r = null, body = {};
    try {
      r = await fetch(`/live/rooms/${code}/answer`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ student: token(), question: asked.id, answer }) });
      body = await r.json().catch(() => ({}));
    } catch (e) { say('Not sent: the connection is interrupted. Try again in a moment.', 'err'); return; }
    const same = q && asked.id === q.id && asked.asked === q.asked;   // (its status may have changed meanwhile)
    if (r.ok) {
      if (!same) return;                               // another question came meanwhile
      remember({ key: body.key, label: body.label });
      if (q.status !== 'open') { render(); return; }   // closed while it travelled: counted, and said so
      say(`${body.replaced ? 'Answer changed to' : 'Answer received:'} «${body.label}». You can change it until the `
          + 'presenter reveals.', 'ok');
      mark();
    } else if (same) {
      say(body.error || `Not counted (${r.status}): try again.`, 'err');
    }
  };

  const mark = () => document.querySelectorAll('#vote [data-key]').forEach((b) => {
    b.classList.toggle('mine', !!mine && b.dataset.key === mine.key);
    b.setAttribute('aria-pressed', String(!!mine && b.dataset.key === mine.key));
  });

  const option = (text, key, answer, cls) => {
    const b = el('button', `vote-opt ${cls || ''}`, text);
    b.type = 'button';
    b.dataset.key = key;
    b.disabled = q.status !== 'open';
    b.addEventListener('click', () => send(answer));
    return b;
  };

  const choices = () => {
    const box = el('div', `vote-options vote-${q.kind}`);
    if (q.kind === 'head') {
      const [L, H] = q.grid;
      const table = el('table', 'vote-grid');
      const head = el('tr');
      head.appendChild(el('th', '', ''));
      for (let h = 1; h <= H; h++) head.appendChild(el('th', '', `H${h}`));
      table.appendChild(head);
      for (let l = 1; l <= L; l++) {
        const row = el('tr');
        row.appendChild(el('th', '', `L${l}`));
        for (let h = 1; h <= H; h++) {
          const i = (l - 1) * H + (h - 1);
          const td = el('td');
          const b = option(String(h), String(i), { option: i }, 'cell');
          b.setAttribute('aria-label', `layer ${l}, head ${h}`);
          td.appendChild(b);
          row.appendChild(td);
        }
        table.appendChild(row);
      }
      box.appendChild(table);
      return box;
    }
    q.options.forEach((o, i) => box.appendChild(option(q.kind === 'next' ? words(o) : o,
                                                      q.kind === 'next' ? o : String(i), { option: i })));
    if (q.typed && q.status === 'open') {
      const form = el('form', 'vote-typed');
      const input = el('input');
      input.maxLength = 40;
      input.placeholder = 'or type a word';
      input.value = typed;
      input.setAttribute('aria-label', 'type a word');
      input.addEventListener('input', () => { typed = input.value; });
      const go = el('button', '', 'Send');
      go.type = 'submit';
      form.append(input, go);
      form.addEventListener('submit', (e) => { e.preventDefault(); if (input.value.trim()) send({ typed: input.value }); });
      box.appendChild(form);
    }
    return box;
  };

  // after the reveal: the room's answers as bars, the model's in orange, the student's own outlined
  const result = () => {
    const counts = q.counts || {};
    const n = Object.values(counts).reduce((a, b) => a + b, 0);
    const keys = q.kind === 'head' ? Object.keys(counts).sort((a, b) => counts[b] - counts[a]).slice(0, 8)
      : (q.kind === 'next' ? [...q.options, ...Object.keys(counts).filter((k) => !q.options.includes(k))]
        : q.options.map((_, i) => String(i)));
    if (q.answer && !keys.includes(q.answer)) keys.unshift(q.answer);
    const box = el('div', 'vote-bars');
    keys.filter((k) => counts[k] || k === q.answer || (mine && k === mine.key)).forEach((k) => {
      const c = counts[k] || 0;
      const row = el('div', `vote-bar${k === q.answer ? ' model' : ''}${mine && k === mine.key ? ' mine' : ''}`);
      row.appendChild(el('span', 'vote-bar-label', (q.labels && q.labels[k]) || labelOf(k)));
      const track = el('span', 'vote-bar-track');
      const fill = el('span', 'vote-bar-fill');
      fill.style.width = `${n ? (100 * c) / n : 0}%`;
      track.appendChild(fill);
      row.append(track, el('span', 'vote-bar-n', `${c}`));
      box.appendChild(row);
    });
    return box;
  };

  // when each question and status was drawn here (ms since the epoch): for benchmarks and curious students
  const log = window.voteLog = [];
  const render = () => {
    const sec = $('#vote');
    sec.replaceChildren();
    sec.hidden = false;
    sec.dataset.status = q.status;
    sec.dataset.question = String(q.id);
    document.body.classList.toggle('vote-open', q.status !== 'revealed');
    sec.appendChild(el('p', 'vote-kicker', `Question ${q.id} from the presenter`));
    sec.appendChild(el('h3', 'vote-prompt', q.prompt));
    if (q.context) sec.appendChild(el('p', 'vote-context', q.context));
    if (q.status === 'revealed') {
      const model = el('p', 'vote-model');
      model.append('The model: ', el('b', '', `«${q.answer_label}»`), q.answer_note ? ` (${q.answer_note})` : '');
      sec.appendChild(model);
      const same = mine && mine.key === q.answer;
      sec.appendChild(el('p', `vote-yours ${same ? 'same' : 'differs'}`,
        mine ? (same ? `You said «${mine.label}»: the same as the model ✓` : `You said «${mine.label}»; the model chose «${q.answer_label}».`)
          : 'You did not answer this one.'));
      const agreed = (q.counts || {})[q.answer] || 0;
      sec.appendChild(el('p', 'vote-room', `${q.answered} answer${q.answered === 1 ? '' : 's'} from ${q.followers} following · ${agreed} said the same as the model`));
      sec.appendChild(result());
    } else {
      sec.appendChild(choices());
      sec.appendChild(el('p', 'vote-said', ''));
      if (q.status === 'closed') say(mine ? `Answers are closed. Yours: «${mine.label}». Wait for the presenter.`
        : 'Answers are closed: wait for the presenter.');
      else if (mine) say(`Your answer: «${mine.label}». You can change it until the presenter reveals.`, 'ok');
      else say(q.kind === 'head' ? 'Tap a layer × head.' : 'Tap your answer.');
      mark();
    }
    log.push([q.id, q.status, Date.now()]);
    if (log.length > 200) log.shift();
  };

  window.roomVote = {
    show(question, roomCode) {
      code = roomCode;
      if (!question) {
        q = null; shownAs = ''; mine = null;
        const sec = $('#vote');
        if (sec) { sec.hidden = true; sec.replaceChildren(); }
        document.body.classList.remove('vote-open');
        return;
      }
      const as = `${question.id}:${question.asked}:${question.status}`;
      if (as === shownAs) return;                     // the presenter moved: the question stays as it is
      if (!q || q.id !== question.id || q.asked !== question.asked) typed = '';
      shownAs = as;
      q = question;
      mine = recall();
      render();
    },
  };
})();
