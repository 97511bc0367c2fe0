() => {
  // A phone's column (or a turned phone): tell the page, whose figures then stack their panels. The first
  // figures already know (the page-load event reads the same media query); this follows later turns.
  const mq = window.matchMedia('(max-width: 640px)');
  const sync = () => {
    const box = document.querySelector('#narrow-screen input[type=checkbox]');
    if (box && box.checked !== mq.matches) box.click();
  };
  mq.addEventListener('change', sync);
  // The browser's light or dark preference changed while the page is open: Gradio recolours the page (unless the
  // link forces a look with ?__theme=dark or light), and the Look follows, so the figures match the page again.
  const dark = window.matchMedia('(prefers-color-scheme: dark)');
  dark.addEventListener('change', () => {
    if (['dark', 'light'].includes(new URL(window.location.href).searchParams.get('__theme'))) return;
    const want = dark.matches ? 'Dark' : 'Light';
    const option = document.querySelector(`#look input[type=radio][value="${want}"]`);
    if (option && !option.checked) option.click();
  });
  // The right column's panels open over the page (style.css): a click or tap elsewhere closes them, as a menu.
  document.addEventListener('click', (e) => {
    if (window.innerWidth <= 640) return;
    for (const id of ['display', 'glossary']) {
      const panel = document.getElementById(id), head = panel && panel.querySelector(':scope > .label-wrap');
      if (head && head.classList.contains('open') && !panel.contains(e.target)) head.click();
    }
  }, true);
}
