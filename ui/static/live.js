() => {
  // Live lecture (ui/live.py). The presenter's panel: the page's own address in the follow link.
  const fillOrigin = () => document.querySelectorAll('.live-origin').forEach((e) => {
    if (!e.textContent) e.textContent = window.location.origin + window.location.pathname.replace(/\/$/, '');
  });
  new MutationObserver(fillOrigin).observe(document.body, { childList: true, subtree: true });
  // A follower (?follow=CODE): poll the room's view (ETag: 304 while nothing changed) and hand each new one to
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
  const poll = async () => {
    try {
      const r = await fetch(`/live/rooms/${code}`, { headers: etag ? { 'If-None-Match': etag } : {}, cache: 'no-store' });
      if (r.status === 200) {
        etag = r.headers.get('ETag');
        latest = (await r.json()).state;
        if (first) applied = JSON.stringify(latest);      // the page opened on this view already
        else if (following) apply(latest);
        first = false;
      } else if (r.status === 404) {
        show(`Room ${code} has ended: the page is yours.`);
        toggle.hidden = true;
        return;
      }
    } catch (e) { /* the network blinked: try again */ }
    setTimeout(poll, 700);
  };
  setTimeout(poll, 400);
}
