() => {
  // A phone's column (or a turned phone): tell the page, whose figures then stack their panels. The first
  // figures already know (the page-load event reads the same media query); this follows later turns.
  const mq = window.matchMedia('(max-width: 640px)');
  const sync = () => {
    const box = document.querySelector('#narrow-screen input[type=checkbox]');
    if (box && box.checked !== mq.matches) box.click();
  };
  mq.addEventListener('change', sync);
}
