() => {
  // One figure full screen, for the back of a lecture room: a button in the corner of every figure shows that
  // figure alone, filling the screen (the browser's Fullscreen API on the figure's box; where the browser refuses,
  // the same box as an overlay over the page); the button again, or Escape, leaves it. The figure is redrawn to
  // fill the screen: its own height is set aside while it is shown so, and given back when it leaves. A figure
  // that changes meanwhile (the ← → keys step the decoding) is redrawn to fill the screen too.
  const ICON_OPEN = '<svg viewBox="0 0 24 24" width="1em" height="1em" aria-hidden="true" fill="none" ' +
    'stroke="currentColor" stroke-width="2.4" stroke-linecap="round"><path d="M4 9V4h5M15 4h5v5M20 15v5h-5M9 20H4v-5"/></svg>';
  const ICON_CLOSE = '<svg viewBox="0 0 24 24" width="1em" height="1em" aria-hidden="true" fill="none" ' +
    'stroke="currentColor" stroke-width="2.4" stroke-linecap="round"><path d="M9 4v5H4M20 9h-5V4M15 20v-5h5M4 15h5v5"/></svg>';
  const OPEN = 'Show this figure full screen', CLOSE = 'Leave full screen (Esc)';
  let shown = null;                       // {host, gd, height}: the figure on the whole screen, if any

  const plotOf = (host) => host.querySelector(':scope > .js-plotly-plot') || host.querySelector('.js-plotly-plot');
  const redraw = (gd) => { if (window.Plotly && gd && gd.layout) window.Plotly.Plots.resize(gd); };

  // Plotly.Plots.resize (Gradio calls it after every draw) sizes a figure from its box unless the figure sets a
  // height: in the shown box (full screen by CSS), a figure set aside its height fills the screen. The height it
  // had on the page is kept, and given back when it leaves.
  const fill = () => {
    const gd = shown && plotOf(shown.host);
    if (!gd || !gd.layout) return;
    shown.gd = gd;
    if (gd.layout.height) delete gd.layout.height;
    hook(gd);
    redraw(gd);
  };

  const hook = (gd) => {                  // a new figure drawn meanwhile: its own height is the one to give back
    if (gd._fullScreenHooked || typeof gd.on !== 'function') return;
    gd._fullScreenHooked = true;
    gd.on('plotly_afterplot', () => {
      if (!shown || !shown.host.contains(gd) || !gd.layout || !gd.layout.height) return;
      shown.height = gd.layout.height;
      setTimeout(fill, 0);
    });
  };

  const label = (btn, on) => {
    btn.innerHTML = on ? ICON_CLOSE : ICON_OPEN;
    btn.title = on ? CLOSE : OPEN;
    btn.setAttribute('aria-label', on ? CLOSE : OPEN);
    btn.setAttribute('aria-pressed', on ? 'true' : 'false');
  };

  const enter = (host) => {
    if (shown) leave();
    const gd = plotOf(host);
    shown = {host, gd, height: gd && gd._fullLayout ? gd._fullLayout.height : null};
    host.classList.add('fig-full-on');
    document.body.classList.add('fig-full-open');
    const btn = host.querySelector(':scope > .fig-full-btn');
    if (btn) { label(btn, true); btn.focus({preventScroll: true}); }
    const settle = () => requestAnimationFrame(() => requestAnimationFrame(fill));
    if (document.fullscreenEnabled && host.requestFullscreen) {
      host.requestFullscreen({navigationUI: 'hide'}).then(settle, settle);   // refused: the overlay stays
    } else {
      settle();
    }
  };

  const leave = () => {
    if (!shown) return;
    const {host, height} = shown;
    shown = null;
    if (document.fullscreenElement === host && document.exitFullscreen) document.exitFullscreen().catch(() => {});
    host.classList.remove('fig-full-on');
    document.body.classList.remove('fig-full-open');
    const btn = host.querySelector(':scope > .fig-full-btn');
    if (btn) label(btn, false);
    const gd = plotOf(host);
    if (gd && gd.layout && window.Plotly) {
      requestAnimationFrame(() => height ? window.Plotly.relayout(gd, {height}) : redraw(gd));
    }
  };

  // The browser left full screen by itself (its own Escape, or F11): the figure goes back to its place.
  document.addEventListener('fullscreenchange', () => {
    if (shown && document.fullscreenElement !== shown.host) leave();
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && shown) { leave(); e.preventDefault(); e.stopPropagation(); }
  }, true);

  // A button on every figure, added as figures appear (tabs are drawn when first opened).
  const addButtons = () => {
    for (const gd of document.querySelectorAll('.js-plotly-plot')) {
      const host = gd.parentElement;
      if (!host || host.querySelector(':scope > .fig-full-btn')) continue;
      const btn = document.createElement('button');
      btn.type = 'button';
      btn.className = 'fig-full-btn';
      label(btn, false);
      btn.addEventListener('click', (e) => {
        e.preventDefault(); e.stopPropagation();
        if (shown && shown.host === host) leave(); else enter(host);
      });
      host.classList.add('fig-full-host');
      host.appendChild(btn);
    }
  };
  let queued = false;
  new MutationObserver(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; addButtons(); });
  }).observe(document.body, {childList: true, subtree: true});
  addButtons();
}
