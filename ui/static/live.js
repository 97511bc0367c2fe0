() => {
  // Live lecture (ui/live.py). The presenter's panel: the page's own address in the follow link.
  const fillOrigin = () => document.querySelectorAll('.live-origin').forEach((e) => {
    if (!e.textContent) e.textContent = window.location.host + window.location.pathname.replace(/\/$/, '');
  });
  new MutationObserver(fillOrigin).observe(document.body, { childList: true, subtree: true });
  // A student who left a lecture's page with "Explore on my own" (?room=CODE, ui/static/follow.js) is told that
  // this page is theirs, with the way back to the lecture.
  const code = (new URLSearchParams(window.location.search).get('room') || '').trim().toUpperCase();
  if (!/^[A-Z0-9]{4,12}$/.test(code)) return;
  const bar = document.createElement('div');
  bar.id = 'follow-bar';
  bar.className = 'detached';
  bar.innerHTML = '<span class="follow-status"></span><a id="follow-back" href="/?follow=' + code + '">Back to the lecture</a>';
  bar.querySelector('.follow-status').textContent = `Exploring on your own: the presenter's screen (room ${code}) moves on without you`;
  document.body.prepend(bar);
}
