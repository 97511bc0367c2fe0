(stops) => {
  // The guided tour (ui/tour.py holds its stops): a card with Back / Next, each stop opening its tab, pressing
  // its button and outlining the part of the page it talks about. Escape or × closes it.
  if (!stops.length) return;
  let at = -1, card = null;
  const seen = (el) => (el.checkVisibility ? el.checkVisibility() : el.offsetParent !== null);
  const lit = () => document.querySelectorAll('.tour-target');
  const clear = () => lit().forEach((el) => el.classList.remove('tour-target'));
  const openTab = (title) => {
    const tab = [...document.querySelectorAll('[role=tab]')].find((b) => b.textContent.trim() === title);
    if (tab && tab.getAttribute('aria-selected') !== 'true') tab.click();
  };
  const whenVisible = (selector, then, tries = 40) => {
    const el = document.querySelector(selector);
    if (el && seen(el) && el.getBoundingClientRect().height > 0) then(el);
    else if (tries > 0) setTimeout(() => whenVisible(selector, then, tries - 1), 200);
  };
  const close = () => { clear(); if (card) card.remove(); card = null; at = -1; };
  const show = (i) => {
    at = i; const stop = stops[i];
    clear();
    if (stop.tab) openTab(stop.tab);
    if (stop.press) setTimeout(() => { const b = document.getElementById(stop.press); if (b && at === i && card) b.click(); }, 300);
    card.querySelector('.tour-title').textContent = stop.title;
    card.querySelector('.tour-text').textContent = stop.text;
    card.querySelector('.tour-count').textContent = `${i + 1} / ${stops.length}`;
    card.querySelector('.tour-back').disabled = i === 0;
    card.querySelector('.tour-next').textContent = i === stops.length - 1 ? 'Done' : 'Next';
    whenVisible(stop.target, (el) => {
      if (at !== i) return;
      el.classList.add('tour-target');
      el.scrollIntoView({block: 'center', behavior: 'smooth'});
      // the card goes to the bottom corner the part leaves freer (a wide part: the left, where labels are)
      const r = el.getBoundingClientRect();
      card.classList.toggle('tour-left', r.left + r.width / 2 > innerWidth / 2 || r.width > innerWidth * 0.8);
    });
  };
  const start = () => {
    close();
    card = document.createElement('div');
    card.id = 'tour-card'; card.setAttribute('role', 'dialog'); card.setAttribute('aria-label', 'Guided tour');
    card.innerHTML = '<div class="tour-head"><span class="tour-count"></span><button class="tour-close" ' +
      'aria-label="Close the tour">×</button></div><div class="tour-title"></div><p class="tour-text"></p>' +
      '<div class="tour-buttons"><button class="tour-back">Back</button><button class="tour-next">Next</button></div>';
    document.body.appendChild(card);
    card.querySelector('.tour-close').onclick = close;
    card.querySelector('.tour-back').onclick = () => at > 0 && show(at - 1);
    card.querySelector('.tour-next').onclick = () => (at < stops.length - 1 ? show(at + 1) : close());
    show(0);
    card.querySelector('.tour-next').focus();
  };
  document.addEventListener('click', (e) => { if (e.target.closest && e.target.closest('#tour-btn')) start(); });
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && card) close(); });
}
