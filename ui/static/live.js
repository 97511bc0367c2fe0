() => {
  // Live lecture (ui/live.py). The presenter's panel: the page's own address in the follow link.
  const fillOrigin = () => document.querySelectorAll('.live-origin').forEach((e) => {
    if (!e.textContent) e.textContent = window.location.origin + window.location.pathname.replace(/\/$/, '');
  });
  new MutationObserver(fillOrigin).observe(document.body, { childList: true, subtree: true });
  // A follower (?follow=CODE): listen to the room's stream of views (server-sent events; where a stream cannot
  // stay open, poll the room's view with its ETag instead: 304 while nothing changed) and hand each new view to
  // the page through the off-screen #follow-state box; "Explore on my own" stops that, "Follow again" rejoins.
  const code = (new URLSearchParams(window.location.search).get('follow') || '').trim().toUpperCase();
  if (!/^[A-Z0-9]{4,12}$/.test(code)) return;
  let following = true, etag = null, latest = null, applied = null, first = true;
  const bar = document.createElement('div');
  bar.id = 'follow-bar';
  bar.innerHTML = '<span class="follow-status"></span><button id="follow-toggle" type="button"></button>';
  document.body.prepend(bar);
  const status = bar.querySelector('.follow-status'), toggle = bar.querySelector('#follow-toggle');
  const show = (text) => { status.textContent = text; };
  const label = () => {
    toggle.textContent = following ? 'Explore on my own' : 'Follow again';
    bar.classList.toggle('detached', !following);
    show(following ? `Following the presenter (room ${code})` : `Exploring on your own (room ${code})`);
  };
  const apply = (state) => {
    const json = JSON.stringify(state);
    if (json === applied) return;
    const box = document.querySelector('#follow-state textarea, #follow-state input');
    if (!box) return;
    box.value = json;
    box.dispatchEvent(new Event('input', { bubbles: true }));
    applied = json;
  };
  toggle.addEventListener('click', () => { following = !following; label(); if (following && latest) apply(latest); });
  label();
  const received = (state) => {
    latest = state;
    if (first) applied = JSON.stringify(latest);      // the page opened on this view already
    else if (following) apply(latest);
    first = false;
  };
  const ended = () => {
    show(`Room ${code} has ended: the page is yours.`);
    toggle.hidden = true;
  };
  const poll = async () => {
    try {
      const r = await fetch(`/live/rooms/${code}`, { headers: etag ? { 'If-None-Match': etag } : {}, cache: 'no-store' });
      if (r.status === 200) {
        etag = r.headers.get('ETag');
        received((await r.json()).state);
      } else if (r.status === 404) {
        ended();
        return;
      }
    } catch (e) { /* the network blinked: try again */ }
    setTimeout(poll, 700);
  };
  if (!window.EventSource) { setTimeout(poll, 400); return; }
  const stream = new EventSource(`/live/rooms/${code}/events`);
  stream.onmessage = (ev) => { try { received(JSON.parse(ev.data).state); } catch (e) { /* not a view */ } };
  stream.addEventListener('end', () => { stream.close(); ended(); });
  // The browser reconnects by itself after a dropped stream; a refused one (404, a proxy that will not stream)
  // closes it: polling then says whether the room has ended, or keeps the page following.
  stream.onerror = () => { if (stream.readyState === EventSource.CLOSED) setTimeout(poll, 400); };
}
